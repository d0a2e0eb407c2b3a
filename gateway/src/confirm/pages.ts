import {
  childTraceparent,
  isAskReply,
  isToolError,
  randomId,
  TOOL_CONTRACTS,
  type CallReply,
  type ToolContract,
} from "@hatch/contracts";
import { type Database, type Logger } from "@hatch/platform";
import { cookieHeaders, type AccessIdentity, type Auth, type BrowserState } from "../auth/index.ts";
import { callService, type CallerInfo, type ServiceClientDeps } from "../services.ts";
import { htmlResponse } from "../pages/layout.ts";
import { parseAnswer } from "./form.ts";
import type { ConfirmOutcomes } from "./outcomes.ts";
import { decideConfirmation, findConfirmation, recordResult, type PendingConfirmation } from "./store.ts";
import { confirmPage, outcomePage, unavailablePage, type Unavailable } from "./views.ts";
import { signInRedirect } from "../auth/http.ts";

export interface ConfirmPagesDeps {
  db: Database;
  auth: Pick<Auth, "pages" | "identityForGrant">;
  calls: ServiceClientDeps;
  logger: Logger;
  now: () => number;
  /** Told of each answer, so the AI client that asked hears it on its next tool call. */
  outcomes: Pick<ConfirmOutcomes, "recorded">;
}

const contracts = new Map(TOOL_CONTRACTS.map((c) => [c.name, c]));
const ID = /^[A-Za-z0-9_-]{1,64}$/;
const STATUS: Record<Unavailable, number> = {
  unknown: 404,
  expired: 410,
  confirmed: 409,
  cancelled: 409,
  revoked: 403,
  read_only: 403,
};

type Signed = BrowserState & { user: NonNullable<BrowserState["user"]> };

function page(state: BrowserState, body: string, status = 200): Response {
  return htmlResponse(body, { status, headers: cookieHeaders(state.setCookies) });
}

function refuse(state: Signed, reason: Unavailable, pending: PendingConfirmation | null = null): Response {
  return page(state, unavailablePage(state, reason, pending?.result ?? null), STATUS[reason]);
}

/** Why a confirmation the user cannot answer right now is out of reach (another user's reads as unknown). */
function unavailableReason(pending: PendingConfirmation | null, now: number): Unavailable | null {
  if (!pending || !contracts.has(pending.tool)) return "unknown";
  if (pending.state !== "pending") return pending.state;
  return pending.expiresAt.getTime() <= now ? "expired" : null;
}

type Answerable =
  | { ok: true; pending: PendingConfirmation; contract: ToolContract; identity: AccessIdentity }
  | { ok: false; reason: Unavailable; pending: PendingConfirmation | null };

/**
 * The user's own confirmation, if it can still be answered, with the grant it acts under: a question from a client
 * that has since been disconnected is withdrawn (shown as such, with no buttons).
 */
async function loadAnswerable(deps: ConfirmPagesDeps, id: string, userId: string): Promise<Answerable> {
  const pending = ID.test(id) ? await findConfirmation(deps.db, id, userId) : null;
  const reason = unavailableReason(pending, deps.now());
  const contract = pending ? contracts.get(pending.tool) : undefined;
  if (reason || !pending || !contract) return { ok: false, reason: reason ?? "unknown", pending };
  const identity = await deps.auth.identityForGrant(pending.grantId);
  if (!identity || identity.userId !== userId) return { ok: false, reason: "revoked", pending };
  return { ok: true, pending, contract, identity };
}

const signIn = (state: BrowserState, id: string) => signInRedirect(`/confirm/${id}`, state.setCookies);

/** `GET /confirm/:id`: the question and its form, for the signed-in user it was asked of. */
export async function showConfirm(deps: ConfirmPagesDeps, request: Request, id: string): Promise<Response> {
  const state = await deps.auth.pages.state(request);
  if (!state.user) return signIn(state, id);
  const signed: Signed = { ...state, user: state.user };
  const found = await loadAnswerable(deps, id, signed.user.id);
  if (!found.ok) return refuse(signed, found.reason, found.pending);
  const { pending, contract, identity } = found;
  return page(
    state,
    confirmPage(signed, pending, { destructive: contract.class === "delete", clientName: identity.clientName }),
  );
}

/** `POST /confirm/:id`: Cancel, or Confirm, which sends the answer to the service once and shows what it said. */
export async function submitConfirm(deps: ConfirmPagesDeps, request: Request, id: string): Promise<Response> {
  const form = await deps.auth.pages.form(request);
  if ("refused" in form) return form.refused;
  const { params, state } = form;
  if (!state.user) return signIn(state, id);
  const signed: Signed = { ...state, user: state.user };
  const found = await loadAnswerable(deps, id, signed.user.id);
  if (!found.ok) return refuse(signed, found.reason, found.pending);
  const { pending, contract, identity } = found;

  if (params.get("action") === "cancel") {
    const cancelled = await decideConfirmation(deps.db, id, signed.user.id, "cancelled", new Date(deps.now()));
    if (!cancelled) return refuse(signed, await lostRace(deps, id, signed.user.id));
    deps.outcomes.recorded(cancelled.grantId);
    deps.logger.info("confirmation cancelled", { tool: pending.tool, user: signed.user.id });
    return page(state, outcomePage(signed, { title: "Cancelled", message: "Nothing was changed.", ok: true }));
  }

  const parsed = parseAnswer(pending.schema, params);
  if (!parsed.ok)
    return page(
      state,
      confirmPage(signed, pending, {
        destructive: contract.class === "delete",
        clientName: identity.clientName,
        values: parsed.values,
        error: parsed.error,
      }),
      400,
    );
  // The answer acts as the client that asked, under its grant (checked live above: disconnecting it withdraws this).
  if (identity.scope === "read" && contract.class !== "read") return refuse(signed, "read_only");
  const confirmed = await decideConfirmation(deps.db, id, signed.user.id, "confirmed", new Date(deps.now()));
  if (!confirmed) return refuse(signed, await lostRace(deps, id, signed.user.id));

  const outcome = await sendAnswer(deps, contract, confirmed, identity, parsed.answer);
  await recordResult(deps.db, id, outcome.message, outcome.ok ? "done" : "failed");
  deps.outcomes.recorded(confirmed.grantId);
  deps.logger.info("confirmation answered", { tool: pending.tool, user: signed.user.id, ok: outcome.ok });
  return page(state, outcomePage(signed, outcome));
}

/** Another request answered it between our read and our update: say what it became. */
async function lostRace(deps: ConfirmPagesDeps, id: string, userId: string): Promise<Unavailable> {
  return unavailableReason(await findConfirmation(deps.db, id, userId), deps.now()) ?? "confirmed";
}

async function sendAnswer(
  deps: ConfirmPagesDeps,
  contract: ToolContract,
  pending: PendingConfirmation,
  identity: AccessIdentity,
  answer: Record<string, unknown>,
): Promise<{ title: string; message: string; ok: boolean }> {
  const caller: CallerInfo = {
    identity,
    // A page cannot show a form mid-call; the client named is the one that asked.
    client: { ...pending.client, elicitation: { form: false, url: false } },
    requestId: randomId(12),
    traceparent: childTraceparent(null),
  };
  let reply: CallReply;
  try {
    reply = await callService(deps.calls, contract, caller, {
      input: pending.input,
      answer,
      confirm: pending.confirmToken,
    });
  } catch (error) {
    if (isToolError(error)) return { title: "Not done", message: error.message, ok: false };
    deps.logger.error("sending a confirmed answer failed", { tool: contract.name, rid: caller.requestId, error });
    const message = `Something went wrong in Hatch, so it cannot tell whether this took effect. Ask your AI to check; if it keeps failing, report request id ${caller.requestId}.`;
    return { title: "Not done", message, ok: false };
  }
  if (!reply.ok) return { title: "Not done", message: reply.error.message, ok: false };
  if (isAskReply(reply))
    return {
      title: "Not done",
      message: `Hatch needs more before it can do this: ${reply.ask.message} Ask your AI to try again.`,
      ok: false,
    };
  return { title: "Done", message: reply.result.text, ok: true };
}
