import {
  ALWAYS_OFFERED,
  groupOf,
  TOOL_CONTRACTS,
  type ClientKind,
  type ToolContract,
  type ToolGroup,
} from "@hatch/contracts";
import type { Tool } from "@modelcontextprotocol/server";
import { z } from "zod";

// `tools/list` is read by a model before the user says a word, so every byte costs. What it carries: the name, a
// title, a description written for the model (when to use the tool, what the user must decide, limits), the input
// schema and the hints. What it leaves out: output schemas (each tool's text carries what its structured content
// has; clients that validate structured content need no schema for it), a second copy of the title in the
// annotations, and the ±2^53 bounds zod writes on every integer. test/tool-list-budget.test.ts holds the budget.

/** The most `tools/list` may weigh for all 29 tools, as JSON (about 8,000 tokens). */
export const TOOL_LIST_BUDGET_BYTES = 32_000;

/** What one connection may see: the client's kind, the groups its URL chose (null = all), read-only or not. */
export interface CatalogView {
  kind: ClientKind;
  groups: readonly ToolGroup[] | null;
  readOnly: boolean;
}

const byName = new Map(TOOL_CONTRACTS.map((c) => [c.name, c]));
const listings = new Map<string, Tool[]>();

/** The contract for a tool as this client may see it; a hidden tool does not exist for that client. */
export function contractFor(name: string, kind: ClientKind): ToolContract | undefined {
  const contract = byName.get(name);
  return contract && !contract.hiddenFor.includes(kind) ? contract : undefined;
}

/** Whether the connection's chosen groups include this tool (tools outside every group are always included). */
export function inGroups(name: string, groups: readonly ToolGroup[] | null): boolean {
  if (!groups || (ALWAYS_OFFERED as readonly string[]).includes(name)) return true;
  const group = groupOf(name);
  return group === null || groups.includes(group);
}

/** `tools/list` for one view, built once per distinct view. A read-only connection lists only the tools that read. */
export function toolsFor(view: CatalogView): Tool[] {
  const key = `${view.kind}|${view.groups?.join(",") ?? "*"}|${view.readOnly}`;
  let tools = listings.get(key);
  if (!tools) {
    tools = TOOL_CONTRACTS.filter(
      (c) =>
        !c.hiddenFor.includes(view.kind) && inGroups(c.name, view.groups) && (!view.readOnly || c.class === "read"),
    ).map(toMcpTool);
    listings.set(key, tools);
  }
  return tools;
}

function toMcpTool(contract: ToolContract): Tool {
  return {
    name: contract.name,
    title: contract.title,
    description: contract.description,
    inputSchema: jsonSchema(contract.input) as Tool["inputSchema"],
    annotations: { ...contract.annotations },
  };
}

/** The largest integer zod writes as a bound when a number has none of its own. */
const SAFE = Number.MAX_SAFE_INTEGER;

/** An input schema as `tools/list` carries it: without `$schema`, safe-integer bounds or validators' long patterns. */
export function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Record<
    string,
    unknown
  >;
  return compact(rest) as Record<string, unknown>;
}

/** A pattern longer than this is a validator's detail (an email's, a date's); the field's words or format say it. */
const LONGEST_PATTERN = 80;

/**
 * Drops what says nothing a model needs: `minimum: -2^53+1` / `maximum: 2^53-1`, and a pattern beside a `format`
 * or too long to read. The gateway and the service still check the full schema.
 */
function compact(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(compact);
  if (!node || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  const hasFormat = "format" in node;
  for (const [key, value] of Object.entries(node)) {
    if ((key === "minimum" && value === -SAFE) || (key === "maximum" && value === SAFE)) continue;
    if (key === "pattern" && typeof value === "string" && (hasFormat || value.length > LONGEST_PATTERN)) continue;
    out[key] = compact(value);
  }
  return out;
}
