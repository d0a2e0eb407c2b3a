import { bindRpc, type Database } from "@hatch/platform";
import { HostResolveInputSchema, type HostResolved } from "@hatch/contracts";
import { and, inArray, isNotNull } from "drizzle-orm";
import type { DomainsContext } from "../context.ts";
import { hostnames } from "../db/schema.ts";

const NOTHING: HostResolved = { address: null, accountId: null };
/** An app address (apps' AddressSchema): a company domain's subdomain label must be one to serve anything. */
const ADDRESS = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Which app a hostname serves. A verified custom or bought hostname serves its app; `<label>.<company domain>` of a
 * verified company domain serves the company's app at address `<label>`. Anything else serves nothing.
 */
export async function resolveHostname(db: Database, raw: string): Promise<HostResolved> {
  const hostname = raw.toLowerCase().replace(/\.$/, "");
  const dot = hostname.indexOf(".");
  const parent = dot > 0 ? hostname.slice(dot + 1) : null;
  const rows = await db
    .select()
    .from(hostnames)
    .where(and(inArray(hostnames.hostname, parent ? [hostname, parent] : [hostname]), isNotNull(hostnames.verifiedAt)));
  const own = rows.find((row) => row.hostname === hostname && row.kind !== "company" && row.address);
  if (own) return { address: own.address, accountId: own.accountId };
  const company = rows.find((row) => row.hostname === parent && row.kind === "company");
  const label = hostname.slice(0, Math.max(dot, 0));
  if (company && ADDRESS.test(label)) return { address: label, accountId: company.accountId };
  return NOTHING;
}

/** `host.resolve` for the app host (no ctx: the hostname is public). */
export function resolveHostRpc(ctx: DomainsContext) {
  return bindRpc(
    HostResolveInputSchema,
    async ({ input }): Promise<HostResolved> => resolveHostname(ctx.db, input.hostname),
    { requiresContext: false },
  );
}
