import type { ToolName } from "./index.ts";

// Tool groups a connection chooses in its URL (`/mcp?features=apps,data`), so a client that needs only some of
// Hatch does not pay for all 29 tool descriptions in its context. whoami and service_docs are always offered.

export const TOOL_GROUPS = {
  apps: ["publish", "list_tools", "share", "rollback", "delete_tool", "tool_stats"],
  data: ["tool_data", "tool_logs"],
  runtime: ["tool_secret", "ai_key", "tool_ai"],
  domains: [
    "company_domain",
    "company_domain_set",
    "custom_domains",
    "custom_domain",
    "find_domain",
    "buy_domain",
    "domain_status",
  ],
  billing: ["billing"],
  orgs: [
    "org",
    "org_setup",
    "org_invite",
    "org_members",
    "org_member_update",
    "org_apps",
    "org_app_pause",
    "org_activity",
  ],
} as const satisfies Record<string, readonly ToolName[]>;

export type ToolGroup = keyof typeof TOOL_GROUPS;
export const TOOL_GROUP_NAMES = Object.keys(TOOL_GROUPS) as ToolGroup[];

/** Offered whatever groups a connection chose. */
export const ALWAYS_OFFERED: readonly ToolName[] = ["whoami", "service_docs"];

/** The group a tool belongs to; null for the tools every connection has. */
export function groupOf(tool: string): ToolGroup | null {
  for (const group of TOOL_GROUP_NAMES) if ((TOOL_GROUPS[group] as readonly string[]).includes(tool)) return group;
  return null;
}

/**
 * Reads `features` from a connection URL's query (comma-separated, may repeat): null when absent (every group), the
 * chosen groups otherwise, or the unknown names.
 */
export function parseFeatures(values: string[]): { groups: ToolGroup[] | null } | { unknown: string[] } {
  if (values.length === 0) return { groups: null };
  const names = values
    .flatMap((v) => v.split(","))
    .map((v) => v.trim().toLowerCase())
    .filter(Boolean);
  const unknown = names.filter((n) => !(TOOL_GROUP_NAMES as string[]).includes(n));
  if (unknown.length > 0) return { unknown };
  return { groups: TOOL_GROUP_NAMES.filter((g) => names.includes(g)) };
}
