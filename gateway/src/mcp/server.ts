import { describeIssues, ERROR_CODES, inSpan, metrics, traceIdOf, type Logger } from "@hatch/shared";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ErrorCode, type ElicitRequestFormParams, ListToolsRequestSchema, McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { AccessIdentity } from "../auth/index.ts";
import { forwardToolCall, errorResult, toolCallRefusal, type ToolCallDeps } from "./call.ts";
import { contractFor, toolsFor } from "./catalog.ts";
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

/** One MCP server per session: its tool list depends on the client that initialized it. */
export function createMcpServer(deps: Omit<ToolCallDeps, "askUser" | "offerLink">, version: string, log: Logger): Server {
  const server = new Server({ name: "hatch", title: "Hatch", version }, { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS });
  const client = () => {
    const name = clientNameOf(server.getClientVersion()?.name);
    return { kind: clientKindOf(name), name, elicitation: elicitationOf(server.getClientCapabilities()) };
  };

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: toolsFor(client().kind) }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const scope = extra.authInfo?.extra as RequestScope | undefined;
    if (!scope) throw new McpError(ErrorCode.InternalError, "The request was not authenticated.");
    const name = request.params.name;
    if (!contractFor(name, client().kind)) {
      metrics.mcpToolCalls.inc({ tool: "unknown", outcome: "unknown_tool" });
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool "${name}". Call tools/list to see the tools Hatch offers.`);
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
    const input = contract.input.safeParse(params.arguments ?? {});
    if (!input.success) return errorResult("invalid_input", `Invalid arguments for ${name}: ${describeIssues(input.error)}`);
    if (contract.class !== "read" && caller.identity.scope === "read") {
      return errorResult(
        "forbidden",
        `This connection was approved for read-only access, so "${name}" (which changes things) was refused. Nothing was changed. ` +
          "To allow changes, the user can reconnect this client and approve full access.",
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
          const result = await server.elicitInput({ mode: "form", message: question.message, requestedSchema: question.schema as ElicitRequestFormParams["requestedSchema"] }, { relatedRequestId: mcpRequestId });
          return result.action === "accept" ? (result.content ?? {}) : null;
        },
        offerLink: async (link) => {
          // One offer per tool call: the call's request id names it, so the two can be matched in logs.
          const elicitationId = `${scope.requestId}-link`;
          const result = await server.elicitInput({ mode: "url", message: link.message, url: link.url, elicitationId }, { relatedRequestId: mcpRequestId });
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
  if (!result.isError) return (result.structuredContent as { status?: unknown } | undefined)?.status === "needs_user" ? "needs_user" : "ok";
  const first = result.content[0];
  const code = first?.type === "text" ? /\(([a-z_]+)\)$/.exec(first.text)?.[1] : undefined;
  return code && CODES.has(code) ? code : "error";
}
