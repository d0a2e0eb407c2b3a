import type { ToolBinding } from "@hatch/shared";
import type { DomainsContext } from "../context.ts";

/** The domains tools with handlers; a tool not listed answers `unavailable` ("not available on this server yet"). */
export function domainsTools(_ctx: DomainsContext): ToolBinding[] {
  return [];
}
