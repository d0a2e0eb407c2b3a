import { eq } from "drizzle-orm";
import { randomId } from "@hatch/contracts";
import { z } from "zod";
import { oauthClients } from "../db/schema.ts";
import { fetchMetadataDocument, isMetadataClientId } from "./client-metadata.ts";
import { applicationTypeProblem, metadataProblem, redirectUriProblem } from "./client-rules.ts";
import type { AuthContext } from "./context.ts";

/** The built-in client that `issueTokenForScript` grants to. */
export const CLI_CLIENT = { clientId: "hatch-cli", name: "Hatch CLI" } as const;

export interface ClientRecord {
  clientId: string;
  registration: "dynamic" | "metadata" | "builtin";
  name: string;
  redirectUris: string[];
  /** A metadata client's document, as fetched (its row is written from it on approval). */
  document?: Record<string, unknown>;
}

const RegistrationSchema = z.object({
  redirect_uris: z.array(z.string()).min(1).max(10),
  client_name: z.string().trim().min(1).max(200).optional(),
  token_endpoint_auth_method: z.string().optional(),
  grant_types: z.array(z.string()).optional(),
  response_types: z.array(z.string()).optional(),
  client_uri: z.string().max(2000).optional(),
  logo_uri: z.string().max(2000).optional(),
  scope: z.string().max(200).optional(),
  software_id: z.string().max(200).optional(),
  software_version: z.string().max(100).optional(),
  // Checked by applicationTypeProblem, which says what is wrong with it.
  application_type: z.unknown().optional(),
});

export type RegistrationResult =
  | { ok: true; body: Record<string, unknown> }
  | { ok: false; error: "invalid_redirect_uri" | "invalid_client_metadata"; description: string };

/** RFC 7591 registration of a public client: no secret is ever issued. */
export async function registerClient(ctx: AuthContext, body: unknown): Promise<RegistrationResult> {
  const parsed = RegistrationSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = String(issue?.path[0] ?? "");
    if (field === "redirect_uris")
      return { ok: false, error: "invalid_redirect_uri", description: "redirect_uris must be a list of 1 to 10 URLs." };
    return {
      ok: false,
      error: "invalid_client_metadata",
      description: field ? `${field} is not valid.` : "The body must be a JSON object.",
    };
  }
  const meta = parsed.data;
  for (const uri of meta.redirect_uris) {
    const problem = redirectUriProblem(uri);
    if (problem)
      return {
        ok: false,
        error: "invalid_redirect_uri",
        description: `redirect URI ${JSON.stringify(uri.slice(0, 200))} ${problem}.`,
      };
  }
  const problem = metadataProblem(meta);
  if (problem) return { ok: false, error: "invalid_client_metadata", description: problem };
  const typeProblem = applicationTypeProblem(meta);
  if (typeProblem) return { ok: false, ...typeProblem };
  const clientId = `hc_${randomId(16)}`;
  const name = meta.client_name ?? (new URL(meta.redirect_uris[0] ?? "").host || "Unnamed client");
  const issuedAt = Math.floor(ctx.now() / 1000);
  const stored = {
    ...meta,
    token_endpoint_auth_method: "none",
    grant_types: meta.grant_types ?? ["authorization_code", "refresh_token"],
    response_types: ["code"],
  };
  await ctx.db
    .insert(oauthClients)
    .values({ clientId, registration: "dynamic", name, redirectUris: meta.redirect_uris, metadata: stored });
  ctx.logger.info("oauth client registered", { clientId, clientName: name });
  return { ok: true, body: { ...stored, client_id: clientId, client_id_issued_at: issuedAt, client_name: name } };
}

export type ClientLookup =
  | { ok: true; client: ClientRecord }
  /** `retryAfter` (seconds) when a metadata document was not fetched because a fetch budget is spent. */
  | { ok: false; reason: string; retryAfter?: number };

/**
 * A registered client, the CLI, or a metadata-document client: its document fetched and checked for a request from
 * `source` (its address key), or still fresh in this copy's cache. A metadata client gets its row only when a person
 * approves it (saveMetadataClient), so opening authorize links writes nothing.
 */
export async function resolveClient(ctx: AuthContext, clientId: string, source: string): Promise<ClientLookup> {
  if (isMetadataClientId(clientId)) return metadataClient(ctx, clientId, source);
  const [row] = await ctx.db.select().from(oauthClients).where(eq(oauthClients.clientId, clientId)).limit(1);
  if (!row) return { ok: false, reason: "This application is not registered with Hatch." };
  const registration = row.registration as ClientRecord["registration"];
  return { ok: true, client: { clientId, registration, name: row.name, redirectUris: row.redirectUris } };
}

async function metadataClient(ctx: AuthContext, clientId: string, source: string): Promise<ClientLookup> {
  let document = ctx.clientDocuments.get(clientId);
  if (!document) {
    const fetched = await fetchMetadataDocument(ctx, clientId, source);
    if (!fetched.ok) return fetched;
    const { ok: _ok, freshMs, ...fresh } = fetched;
    ctx.clientDocuments.set(clientId, fresh, freshMs);
    document = fresh;
  }
  const { name, redirectUris } = document;
  return { ok: true, client: { clientId, registration: "metadata", name, redirectUris, document: document.document } };
}

/** A metadata client a person approved: its row, with the document as checked for this approval. */
export async function saveMetadataClient(ctx: AuthContext, client: ClientRecord): Promise<void> {
  if (client.registration !== "metadata" || !client.document) throw new Error("not a fetched metadata client");
  const values = {
    registration: "metadata",
    name: client.name,
    redirectUris: client.redirectUris,
    metadata: client.document,
    fetchedAt: new Date(ctx.now()),
  };
  await ctx.db
    .insert(oauthClients)
    .values({ clientId: client.clientId, ...values })
    .onConflictDoUpdate({ target: oauthClients.clientId, set: values });
}

export async function ensureCliClient(ctx: AuthContext): Promise<void> {
  await ctx.db
    .insert(oauthClients)
    .values({
      clientId: CLI_CLIENT.clientId,
      registration: "builtin",
      name: CLI_CLIENT.name,
      redirectUris: [],
      metadata: {},
    })
    .onConflictDoNothing();
}
