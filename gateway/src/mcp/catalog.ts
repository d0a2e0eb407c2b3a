import { TOOL_CONTRACTS, type ClientKind, type ToolContract } from "@hatch/shared";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const byName = new Map(TOOL_CONTRACTS.map((c) => [c.name, c]));
const listings = new Map<ClientKind, Tool[]>();

/** The contract for a tool as this client may see it; a hidden tool does not exist for that client. */
export function contractFor(name: string, kind: ClientKind): ToolContract | undefined {
  const contract = byName.get(name);
  return contract && !contract.hiddenFor.includes(kind) ? contract : undefined;
}

/** `tools/list` for one kind of client, built once per kind. */
export function toolsFor(kind: ClientKind): Tool[] {
  let tools = listings.get(kind);
  if (!tools) {
    tools = TOOL_CONTRACTS.filter((c) => !c.hiddenFor.includes(kind)).map(toMcpTool);
    listings.set(kind, tools);
  }
  return tools;
}

function toMcpTool(contract: ToolContract): Tool {
  return {
    name: contract.name,
    title: contract.title,
    description: contract.description,
    inputSchema: jsonSchema(contract.input, "input") as Tool["inputSchema"],
    outputSchema: jsonSchema(contract.output, "output") as Tool["outputSchema"],
    annotations: { title: contract.title, ...contract.annotations },
  };
}

function jsonSchema(schema: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Record<string, unknown>;
  return rest;
}
