import type { ToolBinding } from "@hatch/shared";
import type { DomainsContext } from "../context.ts";
import { companyDomainTool } from "./company-domain.ts";
import { companyDomainSetTool } from "./company-domain-set.ts";
import { customDomainTool } from "./custom-domain.ts";
import { customDomainsTool } from "./custom-domains.ts";

/** The domains tools with handlers; a tool not listed answers `unavailable` ("not available on this server yet"). */
export function domainsTools(ctx: DomainsContext): ToolBinding[] {
  return [companyDomainTool(ctx), companyDomainSetTool(ctx), customDomainsTool(ctx), customDomainTool(ctx)];
}
