import { AppAddressSchema, DashboardLogsSchema, describeIssues, isToolError, rpcMethods } from "@hatch/contracts";
import type { CallToolResult, Tool } from "@modelcontextprotocol/server";
import { z } from "zod";
import { logLine } from "../../pages/dashboard/insight-views.ts";
import { html } from "../../pages/layout.ts";
import { callServiceRpc, type CallerInfo, type ServiceClientDeps } from "../../services.ts";
import { errorResult } from "../call.ts";
import { jsonSchema } from "../catalog.ts";

// Tools only a view calls (MCP Apps visibility ["app"]): listed only to clients that declared the extension, marked
// for the app so the host keeps them out of the model's list, and refused for everyone else as unknown tools. Each
// reads through a service method that checks who may, exactly as the tool beside it does.

/** The logs view's "Follow new lines": the lines after the newest one the view shows. */
export const LOG_TAIL_TOOL = "tool_logs_tail";

const LogTailInput = z
  .object({
    address: AppAddressSchema,
    level: z.enum(["debug", "info", "warn", "error"]).optional(),
    after: z.number().int().min(0).optional().describe("The newest line id the view shows; left out: start from now"),
  })
  .strict();

export interface ViewTool {
  name: string;
  /** The view that calls it. */
  view: string;
  /** The model's tool it goes with: listed and callable only where that one is (the connection URL's groups). */
  beside: string;
  tool: Tool;
  /** Never throws: a failure is a tool error the view shows. */
  run(deps: ServiceClientDeps, caller: CallerInfo, args: unknown): Promise<CallToolResult>;
}

const logTail: ViewTool = {
  name: LOG_TAIL_TOOL,
  view: "logs",
  beside: "tool_logs",
  tool: {
    name: LOG_TAIL_TOOL,
    title: "Follow an app's logs",
    description: "New log lines of an app, for its logs view.",
    inputSchema: jsonSchema(LogTailInput) as Tool["inputSchema"],
    annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  },
  async run(deps, caller, args) {
    const input = LogTailInput.safeParse(args ?? {});
    if (!input.success)
      return errorResult("invalid_input", `Invalid arguments: ${describeIssues(input.error, 5, LogTailInput)}`);
    const { address, level, after } = input.data;
    try {
      // Without `after` the view starts following now: one line read, for the newest id.
      const logs = await callServiceRpc(
        deps,
        "apps",
        rpcMethods.apps.dashboardLogs,
        { address, ...(level ? { level } : {}), ...(after === undefined ? { limit: 1 } : { after, limit: 100 }) },
        DashboardLogsSchema,
        caller,
      );
      const lines = after === undefined ? [] : logs.lines;
      const text = lines.length
        ? [
            `${lines.length} new log lines of ${logs.address}:`,
            ...lines.map((l) => `${l.time} ${l.level} ${l.message}`),
          ].join("\n")
        : `No new log lines of ${logs.address}.`;
      return {
        content: [{ type: "text", text }],
        structuredContent: { address: logs.address, lines, newest: logs.newest },
        _meta: { [VIEW_META_KEY]: { rows: html`${lines.map(logLine)}`.value, newest: logs.newest } },
      };
    } catch (error) {
      // Never throws, as a tool call through the service client never does.
      if (isToolError(error)) return errorResult(error.code, error.message);
      return errorResult(
        "internal",
        `Hatch could not read the new log lines. Try again; if it keeps failing, report request id ${caller.requestId}.`,
      );
    }
  },
};

/** Where a result carries its view's markup (`html`: the whole view; `rows` + `newest`: lines a follow adds). */
export const VIEW_META_KEY = "dev.hatch/view";

export const VIEW_TOOLS: readonly ViewTool[] = [logTail];

export const viewTool = (name: string) => VIEW_TOOLS.find((t) => t.name === name);
