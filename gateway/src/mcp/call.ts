import {
  BusError,
  CallReplySchema,
  decodeJson,
  encodeJson,
  HEADER_REQUEST_ID,
  HEADER_TRACEPARENT,
  isAskReply,
  isToolError,
  signContext,
  subjects,
  unavailable,
  type Bus,
  type CallContextClaims,
  type CallReply,
  type ClientKind,
  type ErrorCode,
  type Logger,
  type Question,
  type ToolContract,
} from "@hatch/shared";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { AccessIdentity } from "../auth/index.ts";
import type { AccountSessions } from "./accounts.ts";
import type { ElicitationSupport } from "./profile.ts";

export interface CallerInfo {
  identity: AccessIdentity;
  client: { kind: ClientKind; name: string; elicitation: ElicitationSupport };
  requestId: string;
  traceparent: string;
}

export interface ToolCallDeps {
  bus: Bus;
  contextKey: Buffer;
  accounts: AccountSessions;
  logger: Logger;
  /** Shows a form to the user (MCP form elicitation); null when they declined or cancelled. */
  askUser?: (question: Question) => Promise<Record<string, unknown> | null>;
}

/** Sends a validated tool call to its service and turns the reply into an MCP tool result. Never throws. */
export async function forwardToolCall(deps: ToolCallDeps, contract: ToolContract, input: unknown, caller: CallerInfo): Promise<CallToolResult> {
  const log = deps.logger.child({ tool: contract.name, rid: caller.requestId, user: caller.identity.userId });
  try {
    const claims = await claimsFor(deps, caller);
    const reply = await send(deps.bus, contract, { ctx: signContext(claims, deps.contextKey), input }, caller);
    if (!isAskReply(reply)) return toResult(contract, reply, log);
    const question = reply.ask;
    const answer = caller.client.elicitation.form && deps.askUser ? await deps.askUser(question) : undefined;
    if (answer === undefined) return askResult(contract, question, log);
    // Not a failure, but there is no result to report: the contract's output has no "declined" shape.
    if (answer === null) return { isError: true, content: [{ type: "text", text: "The user declined, so nothing was changed." }] };
    const ctx = signContext(claims, deps.contextKey);
    return toResult(contract, await send(deps.bus, contract, { ctx, input, answer, confirm: question.confirm }, caller), log);
  } catch (error) {
    if (isToolError(error)) return errorResult(error.code, error.message);
    log.error("tool call failed in the gateway", { error });
    return errorResult("internal", `Hatch could not complete ${contract.name}. Try again; if it keeps failing, report request id ${caller.requestId}.`);
  }
}

async function claimsFor(deps: ToolCallDeps, caller: CallerInfo): Promise<CallContextClaims> {
  const { identity } = caller;
  const base: CallContextClaims = {
    sub: identity.userId,
    email: identity.email,
    name: identity.name,
    permissions: [],
    scope: identity.scope,
    client: caller.client,
    grant: identity.grantId,
    rid: caller.requestId,
  };
  const session = await deps.accounts.resolve(base, caller);
  return { ...base, account: session.account, accountKind: session.accountKind, org: session.org, role: session.role, permissions: session.permissions };
}

async function send(bus: Bus, contract: ToolContract, envelope: Record<string, unknown>, caller: CallerInfo): Promise<CallReply> {
  let raw: unknown;
  try {
    const reply = await bus.request(subjects.tool(contract.service, contract.name), encodeJson(envelope), {
      timeoutMs: contract.timeoutMs,
      headers: { [HEADER_REQUEST_ID]: caller.requestId, [HEADER_TRACEPARENT]: caller.traceparent },
    });
    raw = decodeJson(reply.data);
  } catch (error) {
    if (error instanceof BusError && error.code === "timeout" && contract.class !== "read") {
      return {
        ok: false,
        error: {
          code: "unavailable",
          message: `The ${contract.service} service did not answer in time, so Hatch cannot tell whether ${contract.name} took effect. Check the current state (for example with a listing tool) before trying again.`,
        },
      };
    }
    if (error instanceof BusError) throw unavailable(contract.service);
    throw error;
  }
  const parsed = CallReplySchema.safeParse(raw);
  if (!parsed.success) return { ok: false, error: { code: "internal", message: `The ${contract.service} service sent a reply Hatch could not read.` } };
  return parsed.data;
}

function toResult(contract: ToolContract, reply: CallReply, log: Logger): CallToolResult {
  if (!reply.ok) return errorResult(reply.error.code, reply.error.message);
  if (isAskReply(reply)) return askResult(contract, reply.ask, log);
  return { content: [{ type: "text", text: reply.result.text }], structuredContent: reply.result.data };
}

export function errorResult(code: ErrorCode, message: string): CallToolResult {
  return { isError: true, content: [{ type: "text", text: `${message} (${code})` }] };
}

/** The client cannot show a form: tell the AI what to do, with the browser link when there is one. */
function askResult(contract: ToolContract, question: Question, log: Logger): CallToolResult {
  const fields = Object.entries(question.schema.properties)
    .map(([key, field]) => `- ${key}: ${field.description ?? field.title ?? field.type}${field.enum ? ` (one of: ${field.enum.join(", ")})` : ""}`)
    .join("\n");
  const text = question.link
    ? `${question.message}\nThe user must confirm this in their browser: ${question.link}\nNothing has changed yet.`
    : `${question.message}\nAsk the user for these, then call this tool again with their answers:\n${fields}\nNothing has changed yet.`;
  const userAction = {
    kind: question.link ? "open_link" : "ask_user",
    message: question.message,
    fields: Object.keys(question.schema.properties),
    url: question.link ?? null,
    expiresAt: null,
  };
  const structured = { ...question.data, status: "needs_user", userAction };
  if (!contract.output.safeParse(structured).success) {
    // A client checks structured results against the tool's output schema; rather than send one it would
    // reject, send the instructions alone, flagged so the AI does not take them for a finished result.
    log.warn("needs_user result does not match the output schema", { tool: contract.name });
    return { isError: true, content: [{ type: "text", text }] };
  }
  return { content: [{ type: "text", text }], structuredContent: structured };
}
