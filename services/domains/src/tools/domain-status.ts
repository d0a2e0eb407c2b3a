import { bindTool } from "@hatch/platform";
import { domain_status, ToolError, type DomainStatusOutput } from "@hatch/contracts";
import { and, asc, eq } from "drizzle-orm";
import type { DomainsContext } from "../context.ts";
import { money } from "../bought/money.ts";
import { boughtDomains } from "../db/schema.ts";

const STAGE_WORDS: Record<string, string> = {
  registering: "the registrar is registering it",
  dns: "waiting for its DNS records to point at Hatch",
  certificate: "the HTTPS certificate is being issued; it usually takes a few minutes",
  live: "live",
};

/** domain_status: the domains the caller's account bought, with their stage and renewal. */
export function domainStatusTool(domains: DomainsContext) {
  return bindTool(domain_status, async ({ ctx, input }) => {
    if (!ctx.account) throw new ToolError("forbidden", "This call has no account; sign in again.");
    const wanted = input.domain?.toLowerCase();
    const rows = await domains.db
      .select()
      .from(boughtDomains)
      .where(and(eq(boughtDomains.accountId, ctx.account), wanted ? eq(boughtDomains.domain, wanted) : undefined))
      .orderBy(asc(boughtDomains.createdAt));
    if (wanted && rows.length === 0) {
      throw new ToolError(
        "not_found",
        `${wanted} is not a domain this account bought through Hatch. Call domain_status without domain to list them.`,
      );
    }
    const out: DomainStatusOutput["domains"] = rows.map((row) => ({
      domain: row.domain,
      stage: row.stage,
      renewsAt: row.renewsAt?.toISOString() ?? null,
      autoRenew: row.autoRenew,
      renewalPrice: money(row.renewalMinor, row.currency),
      address: row.address,
      problem: row.problem,
      updatedAt: row.updatedAt.toISOString(),
    }));
    const text = out.length
      ? out
          .map((d) => {
            const renews = d.renewsAt
              ? `; renews ${d.renewsAt.slice(0, 10)} at ${d.renewalPrice!.formatted}${d.autoRenew ? " (automatically)" : ""}`
              : "";
            return `${d.domain}: ${STAGE_WORDS[d.stage]}${d.address ? `; serves the app ${d.address}` : ""}${renews}${d.problem ? `. Problem: ${d.problem}` : ""}`;
          })
          .join("\n")
      : "This account has not bought any domain through Hatch. Find one with find_domain.";
    return { text, data: { domains: out } };
  });
}
