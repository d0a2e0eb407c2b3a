import { ToolError } from "@hatch/contracts";
import { and, eq, inArray, isNotNull } from "drizzle-orm";
import type { DomainsContext } from "../context.ts";
import { hostnames } from "../db/schema.ts";
import { STALE_CLAIM_MS, type HostnameRow } from "./store.ts";

// One hostname, one holder. A hostname someone else holds is refused, with one exception: an unverified claim of
// another account older than STALE_CLAIM_MS lapses, so a person who really controls the DNS can take it over (nobody
// squats a domain by claiming it first without proving it).

/** Whether `row` (held by someone else) may be taken over by `accountId` now. */
export function lapsed(row: HostnameRow, accountId: string, now = Date.now()): boolean {
  return (
    row.verifiedAt === null &&
    row.accountId !== accountId &&
    row.kind !== "bought" &&
    now - row.createdAt.getTime() > STALE_CLAIM_MS
  );
}

/** The refusal for a hostname held by another app or account. */
export function heldElsewhere(hostname: string, row: HostnameRow, accountId: string): ToolError {
  if (row.accountId === accountId) {
    const what =
      row.kind === "company"
        ? "is this company's address for apps"
        : "is already connected to another app of this account";
    return new ToolError(
      "conflict",
      `${hostname} ${what}. A hostname serves one app only: disconnect it there first (custom_domain action disconnect on that app${row.kind === "company" ? ", or company_domain_set action remove" : ""}), then connect it here.`,
    );
  }
  const since = row.verifiedAt ? "has proven it owns it" : "claimed it and may still prove it by its DNS record";
  return new ToolError(
    "conflict",
    `${hostname} is in use on Hatch by another account, which ${since}. A hostname serves one app only, so it cannot be connected here. Use another hostname (for example another subdomain of your domain).`,
  );
}

/** Refuses a hostname under another account's verified company domain (its subdomains serve that company's apps). */
export async function checkNotUnderCompany(
  ctx: Pick<DomainsContext, "db">,
  hostname: string,
  accountId: string,
): Promise<void> {
  const labels = hostname.split(".");
  const parents = labels.slice(1, -1).map((_, i) => labels.slice(i + 1).join("."));
  if (parents.length === 0) return;
  const [company] = await ctx.db
    .select()
    .from(hostnames)
    .where(and(inArray(hostnames.hostname, parents), eq(hostnames.kind, "company"), isNotNull(hostnames.verifiedAt)));
  if (company && company.accountId !== accountId) {
    throw new ToolError(
      "conflict",
      `${hostname} is under ${company.hostname}, another account's company address on Hatch, whose subdomains serve that company's apps. Use a hostname of a domain you own.`,
    );
  }
}
