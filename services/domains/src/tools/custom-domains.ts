import { bindTool } from "@hatch/platform";
import { custom_domains } from "@hatch/contracts";
import { and, asc, eq, inArray } from "drizzle-orm";
import type { DomainsContext } from "../context.ts";
import { hostnames } from "../db/schema.ts";
import { recordsText } from "../hostnames/records.ts";
import { HOSTNAME_CHECK, lookupApp, viewOf } from "../hostnames/store.ts";
import { enqueueJob } from "../jobs/queue.ts";

/** A domain not live whose last check is older than this is checked again when someone looks (custom_domains). */
const LOOK_AGAIN_MS = 5_000;

/** custom_domains: an app's hostnames with their progress, from the table; a stale one is checked again at once. */
export function customDomainsTool(domains: DomainsContext) {
  return bindTool(custom_domains, async ({ ctx, input, requestId }) => {
    const app = await lookupApp(domains, ctx, input.address, requestId);
    const rows = await domains.db
      .select()
      .from(hostnames)
      .where(and(eq(hostnames.appId, app.appId), inArray(hostnames.kind, ["custom", "bought"])))
      .orderBy(asc(hostnames.createdAt));
    const stale = rows.filter(
      (r) => r.stage !== "live" && (r.checkedAt === null || r.checkedAt.getTime() < Date.now() - LOOK_AGAIN_MS),
    );
    if (stale.length > 0) {
      // The person is looking: the next check of each waiting domain is due now (the answer below is the last one's).
      await domains.db.transaction(async (tx) => {
        for (const row of stale) await enqueueJob(tx, { kind: HOSTNAME_CHECK, key: row.hostname });
      });
      domains.jobs.wake();
    }
    const views = rows.map(viewOf);
    if (views.length === 0) {
      return {
        text: `${app.address} has no custom domains. Connect one with custom_domain.`,
        data: { address: app.address, domains: [] },
      };
    }
    const lines = views.map((v) => {
      if (v.stage === "live") return `${v.hostname}: live at https://${v.hostname}/`;
      const records = v.stage === "dns" ? `\n${recordsText(v.records)}` : "";
      return `${v.hostname}: ${v.stage === "dns" ? "waiting for DNS" : "issuing the HTTPS certificate"}${v.problem ? `. ${v.problem}` : ""}${v.checkedAt ? ` (checked ${v.checkedAt})` : ""}${records}`;
    });
    return { text: lines.join("\n"), data: { address: app.address, domains: views } };
  });
}
