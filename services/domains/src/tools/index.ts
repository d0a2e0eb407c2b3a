import type { ToolBinding } from "@hatch/shared";
import type { DomainsContext } from "../context.ts";
import { buyDomainTool } from "./buy-domain.ts";
import { domainStatusTool } from "./domain-status.ts";
import { findDomainTool } from "./find-domain.ts";

/** The domains tools with handlers; a tool not listed answers `unavailable` ("not available on this server yet"). */
export function domainsTools(ctx: DomainsContext): ToolBinding[] {
  return [findDomainTool(ctx), buyDomainTool(ctx), domainStatusTool(ctx)];
}
