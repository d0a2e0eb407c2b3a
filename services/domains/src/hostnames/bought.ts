import { randomId } from "@hatch/contracts";
import { sql } from "drizzle-orm";
import { hostnames } from "../db/schema.ts";
import { enqueueJob } from "../jobs/queue.ts";
import { wantedRecords } from "./records.ts";
import { HOSTNAME_CHECK, hostnameEvent, type Tx } from "./store.ts";
import type { DomainsConfig } from "../config.ts";

/**
 * Puts an app on a domain bought through Hatch (the buy side calls it, in its transaction, once the domain is
 * registered): a `bought` hostname row, proven by the purchase (no TXT), and its `hostname.check` job, which asks the
 * registrar whether the zone is live, then checks the certificate, then marks it live. The purchase is proof of
 * ownership, so it replaces any other claim on the name. Call `ctx.jobs.wake()` after the commit.
 */
export async function connectBoughtHostname(
  tx: Tx,
  config: Pick<DomainsConfig, "edgeCnameTarget" | "edgeIpv4" | "edgeIpv6">,
  bought: { domain: string; accountId: string; appId: string; address: string; boughtBy: string },
): Promise<void> {
  const values = {
    hostname: bought.domain,
    kind: "bought" as const,
    accountId: bought.accountId,
    appId: bought.appId,
    address: bought.address,
    createdBy: bought.boughtBy,
    token: randomId(18),
    stage: "dns" as const,
    verifiedAt: null,
    records: wantedRecords("bought", bought.domain, "", config),
    problem: null,
    checkedAt: null,
    liveAt: null,
  };
  await tx
    .insert(hostnames)
    .values(values)
    .onConflictDoUpdate({ target: hostnames.hostname, set: { ...values, updatedAt: sql`now()` } });
  await enqueueJob(tx, { kind: HOSTNAME_CHECK, key: bought.domain });
  await hostnameEvent(
    tx,
    null,
    values,
    "hostname",
    "connected",
    `${bought.domain}, bought through Hatch, is being put on ${bought.address}`,
  );
}
