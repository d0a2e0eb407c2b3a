import { bindRpc, HostResolveInputSchema, type HostResolved } from "@hatch/shared";
import { and, inArray, isNotNull } from "drizzle-orm";
import type { DomainsContext } from "../context.ts";
import { hostnames } from "../db/schema.ts";

const NOTHING: HostResolved = { address: null, accountId: null };

/**
 * `host.resolve`: which app a hostname serves. A verified custom or bought hostname serves its app; `<label>.<company
 * domain>` of a verified company domain serves the company's app at address `<label>`. Anything else serves nothing.
 */
export function resolveHostRpc(ctx: DomainsContext) {
  return bindRpc(
    HostResolveInputSchema,
    async ({ input }): Promise<HostResolved> => {
      const hostname = input.hostname.toLowerCase().replace(/\.$/, "");
      const dot = hostname.indexOf(".");
      const parent = dot > 0 ? hostname.slice(dot + 1) : null;
      const rows = await ctx.db
        .select()
        .from(hostnames)
        .where(and(inArray(hostnames.hostname, parent ? [hostname, parent] : [hostname]), isNotNull(hostnames.verifiedAt)));
      const own = rows.find((row) => row.hostname === hostname && row.kind !== "company" && row.address);
      if (own) return { address: own.address, accountId: own.accountId };
      const company = rows.find((row) => row.hostname === parent && row.kind === "company");
      if (company && dot > 0) return { address: hostname.slice(0, dot), accountId: company.accountId };
      return NOTHING;
    },
    { requiresContext: false },
  );
}
