// The size of `tools/list`, which a model reads before the user says a word: all 29 tools, and each tool group alone,
// against the budget test/tool-groups.e2e.test.ts holds (32,000 bytes) and the size before the budget (83,833 bytes,
// measured on main when issue 15 was filed). Bytes, not time: nothing here depends on the machine.
import { CLIENT_KINDS, TOOL_GROUP_NAMES } from "@hatch/contracts";
import { TOOL_LIST_BUDGET_BYTES, toolsFor } from "../gateway/src/mcp/catalog.ts";
import { withViewTools } from "../gateway/src/mcp/views/index.ts";

/** tools/list of all 29 tools before the budget (JSON bytes, ChatGPT excepted). */
export const TOOL_LIST_BEFORE_BYTES = 83_833;

export interface ToolListReport {
  allBytes: number;
  tools: number;
  budgetBytes: number;
  beforeBytes: number;
  perGroup: Record<string, { tools: number; bytes: number }>;
  readOnlyBytes: number;
  /** All tools as a client that shows MCP Apps views gets them: view URIs, and the tool only a view calls. */
  viewsBytes: number;
  viewsTools: number;
  /** The largest across client kinds (ChatGPT sees two tools fewer). */
  kindsMaxBytes: number;
}

const size = (tools: unknown[]) => JSON.stringify({ tools }).length;

export function measureToolList(): ToolListReport {
  const all = toolsFor({ kind: "other", groups: null, readOnly: false });
  const perGroup: ToolListReport["perGroup"] = {};
  for (const group of TOOL_GROUP_NAMES) {
    const tools = toolsFor({ kind: "other", groups: [group], readOnly: false });
    perGroup[group] = { tools: tools.length, bytes: size(tools) };
  }
  return {
    allBytes: size(all),
    tools: all.length,
    budgetBytes: TOOL_LIST_BUDGET_BYTES,
    beforeBytes: TOOL_LIST_BEFORE_BYTES,
    perGroup,
    readOnlyBytes: size(toolsFor({ kind: "other", groups: null, readOnly: true })),
    viewsBytes: size(withViewTools(all)),
    viewsTools: withViewTools(all).length,
    kindsMaxBytes: Math.max(...CLIENT_KINDS.map((kind) => size(toolsFor({ kind, groups: null, readOnly: false })))),
  };
}

export function formatToolList(report: ToolListReport): string {
  const ratio = (bytes: number) => (bytes / report.beforeBytes).toFixed(2);
  const rows = Object.entries(report.perGroup).map(
    ([group, g]) => `| features=${group} | ${g.tools} | ${g.bytes.toLocaleString("en")} | ${ratio(g.bytes)} |`,
  );
  return [
    "tools/list (JSON bytes; ratio against the list before the budget)",
    "| view | tools (whoami and service_docs always) | bytes | ratio |",
    "| --- | --- | --- | --- |",
    `| before the budget | 29 | ${report.beforeBytes.toLocaleString("en")} | 1.00 |`,
    `| all tools (budget ${report.budgetBytes.toLocaleString("en")}) | ${report.tools} | ${report.allBytes.toLocaleString("en")} | ${ratio(report.allBytes)} |`,
    `| read_only=true | | ${report.readOnlyBytes.toLocaleString("en")} | ${ratio(report.readOnlyBytes)} |`,
    `| a client with MCP Apps views | ${report.viewsTools} | ${report.viewsBytes.toLocaleString("en")} | ${ratio(report.viewsBytes)} |`,
    ...rows,
  ].join("\n");
}
