import {
  isAskReply,
  isToolError,
  type CallReply,
  type ErrorCode,
  type Question,
  type ToolContract,
} from "@hatch/contracts";
import { type Bus, type Logger, type RateCounter, withDeadline } from "@hatch/platform";
import type { CallToolResult, InputRequiredResult } from "@modelcontextprotocol/server";
import type { AccessIdentity } from "../auth/index.ts";
import type { ConfirmationOpener } from "../confirm/index.ts";
import { callService, type CallerInfo } from "../services.ts";
import type { AccountSessions } from "./accounts.ts";
import { checkAnswer } from "./answers.ts";

export type { CallerInfo } from "../services.ts";

export interface ToolCallLimits {
  counter: RateCounter;
  perGrant: number;
  perUser: number;
}

export interface ToolCallDeps {
  bus: Bus;
  contextKey: Buffer;
  accounts: AccountSessions;
  logger: Logger;
  /** Keeps a question whose fallback is "link" for the dashboard confirm page and returns where to answer it. */
  confirmations: ConfirmationOpener;
  /** Tool calls a minute per grant and per user (absent: not limited). */
  toolCallLimits?: ToolCallLimits;
  /** Shows a form to the user (MCP form elicitation); null when they declined or cancelled. */
  askUser?: (question: Question) => Promise<Record<string, unknown> | null>;
  /** Offers a page for the user to open (MCP URL-mode elicitation) and says what they chose; throws when it failed. */
  offerLink?: (link: { message: string; url: string }) => Promise<"accept" | "decline" | "cancel">;
  /**
   * A 2026-07-28 client that shows forms: the question goes back as an `input_required` result (its state sealed), and
   * the call that brings the answer finishes it (`finishQuestion`), on whichever gateway copy it lands.
   */
  deferQuestion?: (question: Question) => InputRequiredResult;
  /**
   * A 2026-07-28 client that declared URL-mode elicitation: a result that asks the user to open a page goes back as an
   * `input_required` URL request (the result sealed in its state), and the call that brings the user's choice back
   * gets the result, on whichever gateway copy it lands.
   */
  deferLink?: (result: CallToolResult, link: { message: string; url: string }) => InputRequiredResult | null;
  /**
   * A client that shows views (MCP Apps): the result with its view's markup, drawn from the tool's whole answer before
   * the result is made lean for the model (views/index.ts). Never throws.
   */
  drawView?: (contract: ToolContract, input: unknown, result: CallToolResult) => Promise<CallToolResult>;
}

/** Sends a validated tool call to its service and turns the reply into an MCP tool result. Never throws. */
export async function forwardToolCall(
  deps: ToolCallDeps,
  contract: ToolContract,
  input: unknown,
  caller: CallerInfo,
): Promise<CallToolResult | InputRequiredResult> {
  const log = deps.logger.child({ tool: contract.name, rid: caller.requestId, user: caller.identity.userId });
  try {
    const reply = await callService(deps, contract, caller, { input });
    if (isAskReply(reply) && caller.client.elicitation.form && deps.deferQuestion) return deps.deferQuestion(reply.ask);
    const result = isAskReply(reply)
      ? await answerQuestion(deps, contract, input, caller, reply.ask, log)
      : toResult(contract, reply, log);
    return await offerLink(deps, contract, caller, await drawn(deps, contract, input, result), log);
  } catch (error) {
    return failedResult(error, contract, caller, log);
  }
}

/**
 * The second round of a deferred question: the user's answer (null when they declined or cancelled) is checked
 * against the form and sent with the question's confirm token. Never throws.
 */
export async function finishQuestion(
  deps: ToolCallDeps,
  contract: ToolContract,
  input: unknown,
  caller: CallerInfo,
  question: Question,
  answer: Record<string, unknown> | null,
): Promise<CallToolResult | InputRequiredResult> {
  const log = deps.logger.child({ tool: contract.name, rid: caller.requestId, user: caller.identity.userId });
  try {
    const checked = checkAnswer(contract.name, question, answer);
    if (!checked.ok) return checked.result;
    const reply = await callService(deps, contract, caller, {
      input,
      answer: checked.answer,
      confirm: question.confirm,
    });
    return await offerLink(
      deps,
      contract,
      caller,
      await drawn(deps, contract, input, toResult(contract, reply, log)),
      log,
    );
  } catch (error) {
    return failedResult(error, contract, caller, log);
  }
}

/** The result with its view's markup, when the client shows views (the whole answer is still there). */
function drawn(deps: ToolCallDeps, contract: ToolContract, input: unknown, result: CallToolResult) {
  return deps.drawView ? deps.drawView(contract, input, result) : Promise.resolve(result);
}

function failedResult(error: unknown, contract: ToolContract, caller: CallerInfo, log: Logger): CallToolResult {
  if (isToolError(error)) return errorResult(error.code, error.message);
  log.error("tool call failed in the gateway", { error });
  return errorResult(
    "internal",
    `Hatch could not complete ${contract.name}. Try again; if it keeps failing, report request id ${caller.requestId}.`,
  );
}

export const OFFER_OUTCOME = {
  accept: "The user chose to open the page in their browser; wait for them to say they are done.",
  decline: "The user declined to open the page; give them the link if they ask for it.",
  cancel: "The user dismissed the offer to open the page; give them the link.",
} as const;

/**
 * A result that asks the user to open a page (userAction open_link, from any tool): when the client declared URL-mode
 * elicitation, the page is offered to the user directly before the result goes back, and the text says what they
 * chose. The offer failing (client error, timeout) leaves the result as it was: the AI still has the link. A 2026-07-28
 * client gets the offer as an `input_required` URL request instead (`deferLink`), and the result when it calls again.
 */
async function offerLink(
  deps: ToolCallDeps,
  contract: ToolContract,
  caller: CallerInfo,
  full: CallToolResult,
  log: Logger,
): Promise<CallToolResult | InputRequiredResult> {
  const action = (
    full.structuredContent as { userAction?: { kind?: unknown; url?: unknown; message?: unknown } } | undefined
  )?.userAction;
  const result = leaner(contract, full, log);
  if (result.isError || (!deps.offerLink && !deps.deferLink) || !caller.client.elicitation.url) return result;
  if (action?.kind !== "open_link" || typeof action.url !== "string" || !action.url) return result;
  const link = {
    message: typeof action.message === "string" ? action.message : "Open this page to continue.",
    url: action.url,
  };
  if (deps.deferLink) return deps.deferLink(result, link) ?? result;
  let choice: keyof typeof OFFER_OUTCOME;
  try {
    choice = await deps.offerLink!(link);
  } catch (error) {
    log.warn("offering a link by URL elicitation failed", { error });
    return result;
  }
  return withOfferOutcome(result, choice);
}

/**
 * The result as an MCP client gets it: its structuredContent in the contract's leaner form (`structured`), when the
 * contract has one. The whole data stays for the gateway's own reading (the link offered above) and for the
 * dashboard, which calls the service directly. A question or a declined one keeps its data. Should the form fail on
 * data it did not expect (a service copy of another release), the data goes as it is: larger, never wrong.
 */
function leaner(contract: ToolContract, result: CallToolResult, log: Logger): CallToolResult {
  const data = result.structuredContent as Record<string, unknown> | undefined;
  if (!contract.structured || result.isError || !data) return result;
  if (data.status === "needs_user" || data.status === "declined") return result;
  try {
    return { ...result, structuredContent: contract.structured(data) };
  } catch (error) {
    log.warn("structured form failed; the data goes as it is", { error });
    return result;
  }
}

/** The result with what the user chose about the page it offered, in its text. */
export function withOfferOutcome(result: CallToolResult, choice: keyof typeof OFFER_OUTCOME): CallToolResult {
  const [first, ...rest] = result.content;
  const said = OFFER_OUTCOME[choice];
  const content =
    first?.type === "text"
      ? [{ ...first, text: `${first.text}\n${said}` }, ...rest]
      : [...result.content, { type: "text" as const, text: said }];
  return { ...result, content };
}

/** The service asked the user something: a form when the client can show one, else a link or instructions. */
async function answerQuestion(
  deps: ToolCallDeps,
  contract: ToolContract,
  input: unknown,
  caller: CallerInfo,
  question: Question,
  log: Logger,
): Promise<CallToolResult> {
  if (caller.client.elicitation.form && deps.askUser) {
    const checked = checkAnswer(contract.name, question, await deps.askUser(question));
    if (!checked.ok) return checked.result;
    return toResult(
      contract,
      await callService(deps, contract, caller, { input, answer: checked.answer, confirm: question.confirm }),
      log,
    );
  }
  if (question.fallback === "link") {
    const pending = await deps.confirmations.open({ caller, contract, input, question });
    return askResult(contract, question, pending, log);
  }
  return askResult(contract, question, { url: question.link ?? null, expiresAt: question.expiresAt ?? null }, log);
}

function toResult(contract: ToolContract, reply: CallReply, log: Logger): CallToolResult {
  if (!reply.ok) return errorResult(reply.error.code, reply.error.message);
  // A second question after an answer is rare (the answer did not settle it): pass it on as instructions.
  if (isAskReply(reply))
    return askResult(contract, reply.ask, { url: reply.ask.link ?? null, expiresAt: reply.ask.expiresAt ?? null }, log);
  return { content: [{ type: "text", text: reply.result.text }], structuredContent: reply.result.data };
}

export function errorResult(code: ErrorCode, message: string): CallToolResult {
  return { isError: true, content: [{ type: "text", text: `${message} (${code})` }] };
}

/** The client cannot show a form: tell the AI what to do, with the browser link when there is one. */
function askResult(
  contract: ToolContract,
  question: Question,
  where: { url: string | null; expiresAt: string | null },
  log: Logger,
): CallToolResult {
  const fields = Object.entries(question.schema.properties)
    .map(
      ([key, field]) =>
        `- ${key}: ${field.description ?? field.title ?? field.type}${field.enum ? ` (one of: ${field.enum.join(", ")})` : ""}`,
    )
    .join("\n");
  const until = where.expiresAt ? ` (valid until ${where.expiresAt})` : "";
  const text = where.url
    ? `${question.message}\nThe user must confirm this in their browser: give them this link${until}: ${where.url}\n` +
      "Nothing has changed yet: it happens when the user confirms on that page. Do not call this tool again for it unless the user says the link expired."
    : `${question.message}\nAsk the user for these, then call this tool again with their answers:\n${fields}\nNothing has changed yet.`;
  const userAction = {
    kind: where.url ? "open_link" : "ask_user",
    message: question.message,
    // With a link the user answers on the page; the AI fills nothing in.
    fields: where.url ? [] : Object.keys(question.schema.properties),
    url: where.url,
    expiresAt: where.expiresAt,
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

/**
 * Counts a tool call against its connection's and its user's minute; the refusal text (limit_exceeded) says which and
 * when to retry, or null when the call may go on.
 */
export async function toolCallRefusal(
  limits: ToolCallLimits | undefined,
  identity: AccessIdentity,
  log: Logger,
): Promise<string | null> {
  if (!limits) return null;
  const count = async (): Promise<string | null> => {
    const grant = await limits.counter.take(`tools:grant:${identity.grantId}`, limits.perGrant, 60_000);
    if (!grant.allowed)
      return `Too many tool calls on this connection: at most ${limits.perGrant} a minute. Nothing was done; try again in ${grant.retryAfterSeconds} s.`;
    const user = await limits.counter.take(`tools:user:${identity.userId}`, limits.perUser, 60_000);
    if (!user.allowed)
      return `Too many tool calls for this user across all connections: at most ${limits.perUser} a minute. Nothing was done; try again in ${user.retryAfterSeconds} s.`;
    return null;
  };
  try {
    // Counting may not cost the call its deadline (NATS reconnecting): past a moment it is let through, as on failure.
    return await withDeadline(
      count(),
      RATE_COUNT_MS,
      () => new Error(`rate counters did not answer in ${RATE_COUNT_MS} ms`),
    );
  } catch (error) {
    // The shared counters cannot be reached: the call goes on (a limit is not worth an outage), and it is seen.
    log.warn("tool call rate not counted", { error });
  }
  return null;
}

/** How long a tool call waits for its rate counters before it goes on uncounted. */
const RATE_COUNT_MS = 1_500;
