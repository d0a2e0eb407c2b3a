import {
  describeIssues,
  ERROR_CODES,
  groupOf,
  traceIdOf,
  type Question,
  type ToolContract,
  type ToolGroup,
} from "@hatch/contracts";
import { inSpan, metrics, type Logger } from "@hatch/platform";
import {
  type CallToolResult,
  type ElicitRequestFormParams,
  type InputRequiredResult,
  inputRequired,
  inputResponse,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type ServerContext,
} from "@modelcontextprotocol/server";
import type { AccessIdentity } from "../auth/index.ts";
import {
  finishQuestion,
  forwardToolCall,
  errorResult,
  toolCallRefusal,
  withOfferOutcome,
  type CallerInfo,
  type ToolCallDeps,
} from "./call.ts";
import {
  checkBinding,
  openQuestion,
  sealOffer,
  sealQuestion,
  type SealedOffer,
  type StateRefusal,
} from "./request-state.ts";
import { contractFor, inGroups, toolsFor } from "./catalog.ts";
import { registerChangeResources } from "./changes.ts";
import { declaresTasks, registerTaskMethods, taskFor, TASKS_EXTENSION } from "./tasks.ts";
import { clientKindOf, clientNameOf, elicitationOf } from "./profile.ts";
import {
  readView,
  UI_EXTENSION,
  viewResources,
  viewTool,
  withErrorView,
  withViewMarkup,
  withViewTools,
  type ViewSettings,
  type ViewTool,
} from "./views/index.ts";

/** What the HTTP layer hands each MCP request through `authInfo.extra`. */
export interface RequestScope {
  identity: AccessIdentity;
  requestId: string;
  traceparent: string;
  /** Set by a tools/call that became a task (tasks.ts): the HTTP layer answers it instead of the tool's result. */
  task?: object;
  /** A 2026-07-28 request whose client declared MCP Apps (its `_meta` capabilities). */
  views?: boolean;
}

const INSTRUCTIONS =
  "Hatch publishes and runs small web apps. Call whoami to see which account you act as. Read service_docs " +
  "before building an app for Hatch. Secret values, AI keys and card details are never passed through these " +
  "tools: when a tool returns a link, give it to the user to open in their browser.";

/** What the connection URL chose (`/mcp?features=apps,data&read_only=true`), fixed when the session starts. */
export interface ConnectionChoice {
  /** The tool groups chosen; null = all. */
  groups: readonly ToolGroup[] | null;
  /** read_only=true in the URL: only reading tools, whatever the grant allows (a URL never widens a grant). */
  readOnly: boolean;
}

const ALL: ConnectionChoice = { groups: null, readOnly: false };

/**
 * How long a client may keep the tool list (2026-07-28 `ttlMs`). Private: it depends on the grant (read-only), the
 * client and the connection URL. The list only changes with a deploy of Hatch.
 */
export const TOOLS_TTL_MS = 10 * 60_000;

/** The key of the one question in an `input_required` answer (its `inputResponses` entry comes back under it). */
const ANSWER_KEY = "answer";
/** The key of a page offered by URL-mode input. */
const LINK_KEY = "open_page";
/** A result too big to seal into a requestState goes back with its link in the text instead. */
const OFFER_MAX_CHARS = 24_000;

export interface McpServerDeps extends Omit<ToolCallDeps, "askUser" | "offerLink" | "deferQuestion"> {
  /** Seals the state of a question asked as `input_required` (derived from the deployment secret). */
  requestStateKey: Buffer;
  /** Seals task ids (tasks.ts; derived from the deployment secret). */
  taskKey: Buffer;
  /** MCP Apps views (views/): the gateway's origin and the apps' origins. */
  views: ViewSettings;
}

/**
 * One MCP server per 2025-11-25 session or per 2026-07-28 request (`era`): its tool list depends on the client (its
 * initialize, or the request's `_meta`) and the connection URL. A 2025 session asks the user mid-call (elicitation
 * on the call's stream); a 2026 request answers `input_required` with the question sealed in `requestState`, and the
 * call that brings the answer back may land on any gateway copy.
 */
export function createMcpServer(
  deps: McpServerDeps,
  version: string,
  log: Logger,
  choice: ConnectionChoice = ALL,
  era: "legacy" | "modern" = "legacy",
  /** The client declared MCP Apps: a 2025 session's initialize, or a 2026 request's `_meta`. */
  declaredViews = false,
): Server {
  const server = new Server(
    { name: "hatch", title: "Hatch", version },
    {
      // 2026-07-28 adds the tasks extension (buy_domain and custom_domain as tasks) and resource subscriptions on
      // subscriptions/listen (an app published, a domain live: changes.ts); 2025 sessions keep tools only.
      // MCP Apps is advertised only to a client that declared it; others see no change.
      capabilities:
        era === "modern"
          ? {
              tools: { listChanged: false },
              resources: { subscribe: true, listChanged: false },
              extensions: { [TASKS_EXTENSION]: {}, ...(declaredViews ? { [UI_EXTENSION]: {} } : {}) },
            }
          : declaredViews
            ? { tools: { listChanged: false }, resources: {}, extensions: { [UI_EXTENSION]: {} } }
            : { tools: { listChanged: false } },
      instructions: INSTRUCTIONS,
      cacheHints: { "tools/list": { ttlMs: TOOLS_TTL_MS, cacheScope: "private" } },
      // Hatch's own forms are checked by answers.ts (which names the field that did not fit); the SDK's legacy shim
      // is never used: 2025 sessions ask with a plain elicitation request below.
      inputRequired: { legacyShim: false },
    },
  );
  const client = () => {
    const name = clientNameOf(server.getClientVersion()?.name);
    return { kind: clientKindOf(name), name, elicitation: elicitationOf(server.getClientCapabilities()) };
  };

  const readOnly = (scope: RequestScope | undefined) => choice.readOnly || scope?.identity.scope === "read";
  const callerOf = (ctx: ServerContext) => {
    const scope = scopeOf(ctx);
    return scope ? { ...scope, client: client() } : undefined;
  };
  // Whether this client shows views (MCP Apps) is known when its server is made: the 2025 session's initialize or the
  // 2026 request's `_meta` (endpoint.ts reads them).
  const viewResourcesOf = {
    list: () => (declaredViews ? viewResources() : []),
    read: (uri: string) => (declaredViews ? readView(uri, deps.views) : Promise.resolve(null)),
  };
  if (era === "modern") {
    registerTaskMethods(server, deps, callerOf);
    registerChangeResources(server, deps, callerOf, viewResourcesOf);
  } else if (declaredViews) {
    server.setRequestHandler("resources/list", async () => ({ resources: viewResourcesOf.list() }));
    server.setRequestHandler("resources/read", async (request) => {
      const view = await viewResourcesOf.read(request.params.uri);
      if (!view) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Resource not found: ${request.params.uri}`);
      return view;
    });
  }

  server.setRequestHandler("tools/list", async (_request, ctx) => {
    const tools = toolsFor({ kind: client().kind, groups: choice.groups, readOnly: readOnly(scopeOf(ctx)) });
    return { tools: declaredViews ? withViewTools(tools) : tools };
  });

  server.setRequestHandler("tools/call", async (request, ctx): Promise<CallToolResult | InputRequiredResult> => {
    const scope = scopeOf(ctx);
    if (!scope) throw new ProtocolError(ProtocolErrorCode.InternalError, "The request was not authenticated.");
    const name = request.params.name;
    // A view-only tool exists for a client that shows views, where the tool it goes with is offered.
    const viewOnly = declaredViews ? viewTool(name) : undefined;
    const forView =
      viewOnly && contractFor(viewOnly.beside, client().kind) && inGroups(viewOnly.beside, choice.groups)
        ? viewOnly
        : undefined;
    if (!forView && !contractFor(name, client().kind)) {
      metrics.mcpToolCalls.inc({ tool: "unknown", outcome: "unknown_tool" });
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Unknown tool "${name}". Call tools/list to see the tools Hatch offers.`,
      );
    }
    const attributes = { "mcp.method.name": "tools/call", "gen_ai.tool.name": name };
    return inSpan(`tools/call ${name}`, { parent: scope.traceparent, attributes }, async (span, traceparent) => {
      const started = performance.now();
      const answered = forView
        ? await callViewTool(forView, request.params.arguments, scope, traceparent)
        : await withConfirmOutcomes(await callTool(request.params, scope, traceparent, ctx), scope);
      // A refusal a view shows is in a person's words (the model's text stays as it is).
      const result = declaredViews && !("resultType" in answered) ? withErrorView(answered) : answered;
      const seconds = (performance.now() - started) / 1000;
      const outcome = outcomeOf(result);
      metrics.mcpToolCalls.inc({ tool: name, outcome });
      metrics.mcpToolCallSeconds.observe({ tool: name }, seconds);
      span.set("hatch.outcome", outcome);
      if (outcome === "internal" || outcome === "unavailable") span.fail(outcome);
      log.info("tool call", {
        tool: name,
        rid: scope.requestId,
        trace: traceIdOf(traceparent),
        user: scope.identity.userId,
        client: clientNameOf(server.getClientVersion()?.name),
        ms: Math.round(seconds * 100_000) / 100,
        isError: (result as CallToolResult).isError === true,
      });
      return result;
    });
  });

  /** A tool only a view calls: the same rate limits as any call, then its own reading (views/view-tools.ts). */
  async function callViewTool(
    tool: ViewTool,
    args: unknown,
    scope: RequestScope,
    traceparent: string,
  ): Promise<CallToolResult> {
    const caller = { ...scope, client: client(), traceparent };
    const tooMany = await toolCallRefusal(deps.toolCallLimits, caller.identity, log);
    return tooMany ? errorResult("limit_exceeded", tooMany) : tool.run(deps, caller, args);
  }

  /**
   * The result, with what the user answered on confirm pages of this grant since its last call (done, declined, or
   * failed and why), once, as a text of its own. A question waiting for its answer or a task carries nothing: the next
   * finished result does.
   */
  async function withConfirmOutcomes(
    result: CallToolResult | InputRequiredResult,
    scope: RequestScope,
  ): Promise<CallToolResult | InputRequiredResult> {
    if (("resultType" in result && result.resultType === "input_required") || scope.task) return result;
    const lines = await deps.confirmations.outcomes?.take(scope.identity.grantId);
    if (!lines) return result;
    const done = result as CallToolResult;
    return { ...done, content: [...done.content, { type: "text", text: lines }] };
  }

  /**
   * A finished buy_domain or custom_domain whose domain is on its way becomes a task when this request's client takes
   * tasks. The SDK's tools/call result checks know no `resultType: "task"`, so the task is handed to the HTTP layer
   * (the request's scope), which answers it in the result's place; the tool's own result is what the SDK sees.
   */
  /** The result, with its task noted on the request when the client follows long work as a task (an input request
   * is no result yet: it passes as it is). */
  function asTask(
    tool: string,
    caller: CallerInfo,
    result: CallToolResult | InputRequiredResult,
    scope: RequestScope,
  ): CallToolResult | InputRequiredResult {
    if ("resultType" in result && result.resultType === "input_required") return result;
    if (era !== "modern" || !declaresTasks(server)) return result;
    const task = taskFor(deps.taskKey, caller, tool, result as CallToolResult);
    if (task) scope.task = task;
    return result;
  }

  async function callTool(
    params: { name: string; arguments?: Record<string, unknown> },
    scope: RequestScope,
    traceparent: string,
    ctx: ServerContext,
  ): Promise<CallToolResult | InputRequiredResult> {
    const mcpRequestId = ctx.mcpReq.id;
    const caller = { ...scope, client: client(), traceparent };
    const name = params.name;
    const contract = contractFor(name, caller.client.kind)!;
    if (!inGroups(name, choice.groups)) {
      const group = groupOf(name);
      return errorResult(
        "forbidden",
        `"${name}" is in the ${group} tool group, which this connection's URL did not choose (features=${choice.groups?.join(",")}). ` +
          `Nothing was done. To use it, the user adds ${group} to features in the connection URL, e.g. /mcp?features=${[...(choice.groups ?? []), group].join(",")}.`,
      );
    }
    const input = contract.input.safeParse(params.arguments ?? {});
    if (!input.success)
      return errorResult(
        "invalid_input",
        `Invalid arguments for ${name}: ${describeIssues(input.error, 5, contract.input)}`,
      );
    if (contract.class !== "read" && readOnly(scope)) {
      const why =
        caller.identity.scope === "read"
          ? "was approved for read-only access"
          : "was opened with read_only=true in its URL";
      const fix =
        caller.identity.scope === "read"
          ? "To allow changes, the user can reconnect this client and approve full access."
          : "To allow changes, the user connects with a URL without read_only=true.";
      return errorResult(
        "forbidden",
        `This connection ${why}, so "${name}" (which changes things) was refused. Nothing was changed. ${fix}`,
      );
    }
    const overLimit = contract.limitProblem?.(input.data);
    if (overLimit) return errorResult("limit_exceeded", overLimit);
    const binding = { sub: caller.identity.userId, grant: caller.identity.grantId, tool: name, input: input.data };
    const ask = (question: Question): InputRequiredResult =>
      inputRequired({
        inputRequests: {
          [ANSWER_KEY]: inputRequired.elicit({
            message: question.message,
            requestedSchema: question.schema as ElicitRequestFormParams["requestedSchema"],
          }),
        },
        requestState: sealQuestion(deps.requestStateKey, binding, question),
      });
    const offer = (offered: SealedOffer): InputRequiredResult =>
      inputRequired({
        inputRequests: { [LINK_KEY]: inputRequired.elicitUrl({ message: offered.message, url: offered.url }) },
        requestState: sealOffer(deps.requestStateKey, binding, offered),
      });
    const deferLink = (result: CallToolResult, link: { message: string; url: string }) => {
      const offered: SealedOffer = { ...link, result: result as SealedOffer["result"] };
      return JSON.stringify(offered).length > OFFER_MAX_CHARS ? null : offer(offered);
    };
    const drawView = declaredViews
      ? (contract: ToolContract, input: unknown, result: CallToolResult) =>
          withViewMarkup(contract, input, result, { deps, caller, baseUrl: deps.views.baseUrl }, log)
      : undefined;
    const echoed = era === "modern" ? ctx.mcpReq.requestState<string>() : undefined;
    if (echoed !== undefined) {
      // The second round of a question: the sealed state says what was asked; it must be this user's, on this grant,
      // for this tool with these exact arguments, and not expired. It is not counted again against the rate limits.
      const state = openQuestion(deps.requestStateKey, echoed);
      const refused: StateRefusal | null = typeof state === "string" ? state : checkBinding(state, binding);
      if (refused || typeof state === "string") {
        log.info("requestState refused", { tool: name, rid: scope.requestId, reason: refused });
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          refused === "expired"
            ? `The question of this ${name} call expired. Call ${name} again without requestState to ask again.`
            : `This requestState does not belong to this ${name} call. Call ${name} again without requestState.`,
        );
      }
      if (state.offer) {
        // The page was offered; the tool's result waits in the state. The user's choice goes into its text.
        const view = inputResponse(ctx.mcpReq.inputResponses, LINK_KEY);
        if (view.kind === "missing") return offer(state.offer);
        const action = view.kind === "elicit" ? view.action : "cancel";
        return withOfferOutcome(state.offer.result as CallToolResult, action);
      }
      if (!state.question) throw new ProtocolError(ProtocolErrorCode.InvalidParams, "Unreadable requestState.");
      const view = inputResponse(ctx.mcpReq.inputResponses, ANSWER_KEY);
      // The state came back without the answer: ask the same question again.
      if (view.kind === "missing") return ask(state.question);
      const answer =
        view.kind === "elicit" && view.action === "accept" ? ((view.content ?? {}) as Record<string, unknown>) : null;
      return asTask(
        name,
        caller,
        await finishQuestion({ ...deps, deferLink, drawView }, contract, input.data, caller, state.question, answer),
        scope,
      );
    }
    const tooMany = await toolCallRefusal(deps.toolCallLimits, caller.identity, log);
    if (tooMany) return errorResult("limit_exceeded", tooMany);
    if (era === "modern") {
      const result = await forwardToolCall(
        { ...deps, deferQuestion: ask, deferLink, drawView },
        contract,
        input.data,
        caller,
      );
      return asTask(name, caller, result, scope);
    }
    return forwardToolCall(
      {
        ...deps,
        drawView,
        askUser: async (question) => {
          // Sent as a plain request rather than elicitInput, which throws on an answer that does not fit the form: the
          // gateway checks the answer itself (answers.ts) and tells the AI which field was wrong.
          const form: ElicitRequestFormParams = {
            mode: "form",
            message: question.message,
            requestedSchema: question.schema as ElicitRequestFormParams["requestedSchema"],
          };
          const result = await server.request(
            { method: "elicitation/create", params: form },
            { relatedRequestId: mcpRequestId },
          );
          return result.action === "accept" ? (result.content ?? {}) : null;
        },
        offerLink: async (link) => {
          // One offer per tool call: the call's request id names it, so the two can be matched in logs.
          const elicitationId = `${scope.requestId}-link`;
          const result = await server.elicitInput(
            { mode: "url", message: link.message, url: link.url, elicitationId },
            { relatedRequestId: mcpRequestId },
          );
          return result.action;
        },
      },
      contract,
      input.data,
      caller,
    );
  }
  return server;
}

function scopeOf(ctx: ServerContext): RequestScope | undefined {
  return ctx.http?.authInfo?.extra as RequestScope | undefined;
}

const CODES = new Set<string>(ERROR_CODES);

/** A result's outcome label: ok, needs_user (a question is waiting), the error code it ends with, or error (declined, …). */
function outcomeOf(result: CallToolResult | InputRequiredResult): string {
  if ("resultType" in result && result.resultType === "input_required") return "needs_user";
  const done = result as CallToolResult;
  if (!done.isError) {
    const status = (done.structuredContent as { status?: unknown } | undefined)?.status;
    return status === "needs_user" || status === "declined" ? status : "ok";
  }
  const first = done.content[0];
  const code = first?.type === "text" ? /\(([a-z_]+)\)$/.exec(first.text)?.[1] : undefined;
  return code && CODES.has(code) ? code : "error";
}
