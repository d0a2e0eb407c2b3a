import {
  describeIssues,
  ERROR_CODES,
  groupOf,
  inSpan,
  metrics,
  traceIdOf,
  type Logger,
  type ToolGroup,
} from "@hatch/shared";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  ElicitResultSchema,
  ErrorCode,
  type ElicitRequestFormParams,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
} from "@modelcontextprotocol/sdk/types.js";
import type { AccessIdentity } from "../auth/index.ts";
import { forwardToolCall, errorResult, toolCallRefusal, type ToolCallDeps } from "./call.ts";
import { contractFor, inGroups, toolsFor } from "./catalog.ts";
import { clientKindOf, clientNameOf, elicitationOf } from "./profile.ts";

/** What the HTTP layer hands each MCP request through `authInfo.extra`. */
export interface RequestScope {
  identity: AccessIdentity;
  requestId: string;
  traceparent: string;
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

/** One MCP server per session: its tool list depends on the client that initialized it and the connection URL. */
export function createMcpServer(
  deps: Omit<ToolCallDeps, "askUser" | "offerLink">,
  version: string,
  log: Logger,
  choice: ConnectionChoice = ALL,
): Server {
  const server = new Server(
    { name: "hatch", title: "Hatch", version },
    { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS },
  );
  const client = () => {
    const name = clientNameOf(server.getClientVersion()?.name);
    return { kind: clientKindOf(name), name, elicitation: elicitationOf(server.getClientCapabilities()) };
  };

  const readOnly = (scope: RequestScope | undefined) => choice.readOnly || scope?.identity.scope === "read";

  server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => ({
    tools: toolsFor({
      kind: client().kind,
      groups: choice.groups,
      readOnly: readOnly(extra.authInfo?.extra as RequestScope | undefined),
    }),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const scope = extra.authInfo?.extra as RequestScope | undefined;
    if (!scope) throw new McpError(ErrorCode.InternalError, "The request was not authenticated.");
    const name = request.params.name;
    if (!contractFor(name, client().kind)) {
      metrics.mcpToolCalls.inc({ tool: "unknown", outcome: "unknown_tool" });
      throw new McpError(
        ErrorCode.InvalidParams,
        `Unknown tool "${name}". Call tools/list to see the tools Hatch offers.`,
      );
    }
    const attributes = { "mcp.method.name": "tools/call", "gen_ai.tool.name": name };
    return inSpan(`tools/call ${name}`, { parent: scope.traceparent, attributes }, async (span, traceparent) => {
      const started = performance.now();
      const result = await callTool(request.params, scope, traceparent, extra.requestId);
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
        isError: result.isError === true,
      });
      return result;
    });
  });

  async function callTool(
    params: { name: string; arguments?: Record<string, unknown> },
    scope: RequestScope,
    traceparent: string,
    mcpRequestId: string | number,
  ): Promise<CallToolResult> {
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
      return errorResult("invalid_input", `Invalid arguments for ${name}: ${describeIssues(input.error)}`);
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
    const tooMany = await toolCallRefusal(deps.toolCallLimits, caller.identity, log);
    if (tooMany) return errorResult("limit_exceeded", tooMany);
    return forwardToolCall(
      {
        ...deps,
        askUser: async (question) => {
          // Sent as a plain request rather than elicitInput, which throws on an answer that does not fit the form: the
          // gateway checks the answer itself (answers.ts) and tells the AI which field was wrong.
          const form: ElicitRequestFormParams = {
            mode: "form",
            message: question.message,
            requestedSchema: question.schema as ElicitRequestFormParams["requestedSchema"],
          };
          const result = await server.request({ method: "elicitation/create", params: form }, ElicitResultSchema, {
            relatedRequestId: mcpRequestId,
          });
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

const CODES = new Set<string>(ERROR_CODES);

/** A result's outcome label: ok, needs_user (a question is waiting), the error code it ends with, or error (declined, …). */
function outcomeOf(result: CallToolResult): string {
  if (!result.isError) {
    const status = (result.structuredContent as { status?: unknown } | undefined)?.status;
    return status === "needs_user" || status === "declined" ? status : "ok";
  }
  const first = result.content[0];
  const code = first?.type === "text" ? /\(([a-z_]+)\)$/.exec(first.text)?.[1] : undefined;
  return code && CODES.has(code) ? code : "error";
}
