import type { ToolBinding } from "@hatch/platform";
import type { DomainsContext } from "../context.ts";
import { buyDomainTool } from "./buy-domain.ts";
import { companyDomainTool } from "./company-domain.ts";
import { companyDomainSetTool } from "./company-domain-set.ts";
import { customDomainTool } from "./custom-domain.ts";
import { customDomainsTool } from "./custom-domains.ts";
import { domainStatusTool } from "./domain-status.ts";
import { findDomainTool } from "./find-domain.ts";

/** The domains tools, all seven. */
export function domainsTools(ctx: DomainsContext): ToolBinding[] {
  return [
    companyDomainTool(ctx),
    companyDomainSetTool(ctx),
    customDomainsTool(ctx),
    customDomainTool(ctx),
    findDomainTool(ctx),
    buyDomainTool(ctx),
    domainStatusTool(ctx),
  ];
}
