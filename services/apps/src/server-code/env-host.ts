import { describeIssues } from "@hatch/contracts";
import { AiChatRequestSchema } from "../spec/server-code.ts";
import { DATA_ERROR_STATUS } from "../spec/data-rules.ts";
import { type Database } from "@hatch/platform";
import { eq } from "drizzle-orm";
import { DataError } from "../http/answers.ts";
import type { DataCaller } from "../http/caller.ts";
import type { DataRoutes } from "../data/routes.ts";
import { appsTable } from "../db/schema.ts";
import type { Viewer } from "../http/viewer.ts";
import type { Outbound, OutboundCaller } from "../http/outbound.ts";
import type { HostedApp } from "../http/site.ts";
import { HostCallError, type HostCallResult } from "./types.ts";

// What server code's env does outside the sandbox. env.db and env.files go through the very routes pages use
// (/_hatch/db, /_hatch/files: same checks, same errors, live changes announced), called in-process as the app's
// owner: server code acts with the owner's rights. env.api and env.ai go through the app host's Outbound, which
// injects the secret or key; nothing of either comes back into the sandbox.

/** What env's calls need: the database (the owner's name), the data routes and the outbound calls. */
export interface EnvDeps {
  db: Database;
  data: DataRoutes;
  outbound: Outbound;
}

const OWNERS_KEPT = 1000;
/** The owner's identity per app (and owner: a transfer changes the key), read once. */
const owners = new Map<string, Viewer>();

async function ownerOf(deps: EnvDeps, app: HostedApp): Promise<Viewer> {
  const key = `${app.id}:${app.ownerId}`;
  const known = owners.get(key);
  if (known) return known;
  const [row] = await deps.db
    .select({ email: appsTable.ownerEmail, name: appsTable.ownerName })
    .from(appsTable)
    .where(eq(appsTable.id, app.id))
    .limit(1);
  if (!row) throw new HostCallError("not_found", "This app no longer exists.", 404);
  const owner: Viewer = { sub: app.ownerId, email: row.email, name: row.name ?? undefined, account: app.accountId };
  if (owners.size >= OWNERS_KEPT) owners.delete(owners.keys().next().value!);
  owners.set(key, owner);
  return owner;
}

/**
 * Answers one host call of a request to `app`, whose verified viewer is `viewer`; `rateKey` is whose request it is
 * (the viewer, or the address of an anonymous one), so AI calls of anonymous viewers are limited each on their own.
 */
export async function hostCall(
  deps: EnvDeps,
  app: HostedApp,
  viewer: Viewer | null,
  op: Record<string, unknown>,
  body: Uint8Array | null,
  rateKey?: string,
): Promise<HostCallResult> {
  try {
    switch (op.op) {
      case "db":
      case "files":
        return await dataCall(deps, app, op, body);
      case "api":
        return await apiCall(deps, app, { source: "server", viewer, rateKey }, op, body);
      case "ai":
        return await aiCall(deps, app, { source: "server", viewer, rateKey }, op);
      default:
        throw new HostCallError("invalid", "Unknown env call.", 400);
    }
  } catch (error) {
    if (error instanceof DataError) throw new HostCallError(error.code, error.message, DATA_ERROR_STATUS[error.code]);
    throw error;
  }
}

const SEGMENT = /^[A-Za-z0-9_.-]{1,128}$/;

async function dataCall(
  deps: EnvDeps,
  app: HostedApp,
  op: Record<string, unknown>,
  body: Uint8Array | null,
): Promise<string> {
  const kind = op.op === "db" ? "db" : "files";
  const name = String(op.name ?? "");
  const id = op.id === undefined ? null : String(op.id);
  if (!SEGMENT.test(name))
    throw new HostCallError(
      "not_found",
      `There is no ${kind === "db" ? "collection" : "bucket"} "${name.slice(0, 64)}": names are letters, digits, _ and -.`,
      404,
    );
  if (id !== null && (!SEGMENT.test(id) || id === "_changes"))
    throw new HostCallError("not_found", `There is no document or file "${id.slice(0, 64)}" in ${name}.`, 404);
  const rest = id === null ? name : `${name}/${id}`;
  const query = typeof op.query === "string" && op.query ? `?${op.query}` : "";
  const url = new URL(`http://app.invalid/_hatch/${kind}/${rest}${query}`);
  const method = String(op.method ?? "GET");
  const headers: Record<string, string> = {};
  let payload: BodyInit | null = null;
  if (kind === "db" && op.body !== undefined) {
    headers["content-type"] = "application/json";
    payload = JSON.stringify(op.body);
  } else if (kind === "files" && method === "POST") {
    headers["content-type"] = String(op.contentType ?? "application/octet-stream");
    payload = (body ?? new Uint8Array(0)) as Uint8Array<ArrayBuffer>;
  }
  const request = new Request(url, { method, headers, body: payload });
  const caller: DataCaller = { app, viewer: await ownerOf(deps, app), rateKey: `${app.id} server` };
  const response = await deps.data.answer(kind, request, url, rest, caller);
  const text = await response.text();
  if (response.status >= 400) {
    const failure = safeJson(text) as { error?: { code?: string; message?: string } } | null;
    throw new HostCallError(
      failure?.error?.code ?? "unavailable",
      failure?.error?.message ?? "Hatch could not do this right now.",
      response.status,
    );
  }
  return text;
}

async function apiCall(
  deps: EnvDeps,
  app: HostedApp,
  caller: OutboundCaller,
  op: Record<string, unknown>,
  body: Uint8Array | null,
): Promise<HostCallResult> {
  const headers = Array.isArray(op.headers) ? Object.fromEntries((op.headers as unknown[]).filter(isPair)) : {};
  const path = String(op.path ?? "/");
  const result = await deps.outbound.callApi(
    app,
    String(op.name ?? ""),
    path.startsWith("/") ? path : `/${path}`,
    { method: String(op.method ?? "GET"), headers, body },
    caller,
  );
  return [JSON.stringify({ status: result.status, headers: Object.entries(result.headers) }), result.body];
}

async function aiCall(
  deps: EnvDeps,
  app: HostedApp,
  caller: OutboundCaller,
  op: Record<string, unknown>,
): Promise<string> {
  const parsed = AiChatRequestSchema.safeParse(op.request);
  if (!parsed.success)
    throw new HostCallError(
      "invalid",
      `env.ai.chat: ${describeIssues(parsed.error)}. Pass { messages: [{ role: "user", content: "…" }], model: "…" }.`,
      400,
    );
  return JSON.stringify(await deps.outbound.aiChat(app, parsed.data, caller));
}

function isPair(value: unknown): value is [string, string] {
  return Array.isArray(value) && value.length === 2 && typeof value[0] === "string" && typeof value[1] === "string";
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
