import { bindRpc } from "@hatch/platform";
import { DomainProgressInputSchema, ToolError, type DomainProgress } from "@hatch/contracts";
import { and, eq, ne } from "drizzle-orm";
import type { DomainsContext } from "../context.ts";
import { money } from "../bought/money.ts";
import { boughtDomains, hostnames } from "../db/schema.ts";
import { recordsText } from "../hostnames/records.ts";
import { viewOf } from "../hostnames/store.ts";

const BOUGHT_STAGE: Record<string, string> = {
  registering: "The registrar is registering it.",
  dns: "Registered; its DNS records are being put in place.",
  certificate: "Its HTTPS certificate is being issued; it usually takes a few minutes.",
};

/**
 * `domain.progress`: where a bought domain or a custom hostname of the caller's account is, read from this service's
 * own stage data (the stage jobs move it), so whichever gateway copy asks gets the same answer. Another account's
 * name, or one no longer connected, is not_found.
 */
export function domainProgressRpc(domains: DomainsContext) {
  return bindRpc(DomainProgressInputSchema, async ({ ctx, input }): Promise<DomainProgress> => {
    const name = input.name.toLowerCase();
    if (!ctx?.account) throw new ToolError("forbidden", "This call has no account; sign in again.");
    if (input.kind === "bought") {
      const [row] = await domains.db
        .select()
        .from(boughtDomains)
        .where(and(eq(boughtDomains.domain, name), eq(boughtDomains.accountId, ctx.account)));
      if (!row) throw new ToolError("not_found", `${name} is not a domain this account bought through Hatch.`);
      const where = row.address ? ` It serves the app ${row.address}.` : "";
      const data = {
        status: "bought",
        domain: name,
        stage: row.stage,
        firstYearPrice: money(row.firstYearMinor, row.currency),
        renewalPrice: money(row.renewalMinor, row.currency),
        renewsAt: row.renewsAt?.toISOString() ?? null,
      };
      const base = { name, stage: row.stage, address: row.address, updatedAt: row.updatedAt.toISOString(), data };
      if (row.chargeStatus === "refunded")
        return {
          ...base,
          state: "failed",
          text: `${name} could not be registered${row.problem ? `: ${row.problem}` : ""}. The charge was refunded; nothing else is needed.`,
        };
      if (row.stage === "live") return { ...base, state: "live", text: `${name} is live at https://${name}/.${where}` };
      return {
        ...base,
        state: "working",
        text: `${BOUGHT_STAGE[row.stage] ?? row.stage}${row.problem ? ` Problem: ${row.problem}` : ""}${where}`,
      };
    }
    const [row] = await domains.db
      .select()
      .from(hostnames)
      .where(and(eq(hostnames.hostname, name), eq(hostnames.accountId, ctx.account), ne(hostnames.kind, "company")));
    if (!row) throw new ToolError("not_found", `${name} is not connected to an app of this account.`);
    const view = viewOf(row);
    const data = { status: "connected", address: row.address, hostname: name, domain: view };
    const base = { name, stage: row.stage, address: row.address, updatedAt: row.updatedAt.toISOString(), data };
    if (row.stage === "live")
      return { ...base, state: "live", text: `${name} is live at https://${name}/ and serves ${row.address}.` };
    const text =
      row.stage === "dns"
        ? `Waiting for DNS${view.problem ? `: ${view.problem}` : ""}. The records to add at the domain's DNS provider:\n${recordsText(view.records)}`
        : `The DNS records are in place; the HTTPS certificate is being issued${view.problem ? `. ${view.problem}` : ""}.`;
    return { ...base, state: "working", text };
  });
}
