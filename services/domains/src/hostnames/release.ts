import { eventStreamFor, type EventConsumer } from "@hatch/platform";
import { and, eq, inArray } from "drizzle-orm";
import type { DomainsContext } from "../context.ts";
import { hostnames } from "../db/schema.ts";
import { cancelJob } from "../jobs/queue.ts";
import { announceHostChanged, HOSTNAME_CHECK, hostnameEvent } from "./store.ts";

/** The durable consumer every domains copy shares: an app deleted in apps releases its hostnames here. */
export const APP_DELETED_CONSUMER = "domains-app-deleted";

/**
 * `apps.app.deleted` → the app's hostnames (custom, and bought ones it was on) go, with a `hostname.disconnected`
 * event each. Idempotent: a redelivered event finds nothing left to delete and writes nothing. Addresses are never
 * reused, so the address and account identify the app.
 */
export function startAppDeletedConsumer(ctx: DomainsContext): EventConsumer {
  const log = ctx.logger.child({ component: "app-deleted" });
  return eventStreamFor(ctx.bus).consume({
    name: APP_DELETED_CONSUMER,
    filter: "events.apps.app.deleted",
    logger: log,
    handler: async (event) => {
      if (
        event.service !== "apps" ||
        event.entity !== "app" ||
        event.verb !== "deleted" ||
        !event.app ||
        !event.account
      )
        return;
      const { app, account } = event;
      const released = await ctx.db.transaction(async (tx) => {
        const gone = await tx
          .delete(hostnames)
          .where(
            and(
              eq(hostnames.address, app),
              eq(hostnames.accountId, account),
              inArray(hostnames.kind, ["custom", "bought"]),
            ),
          )
          .returning();
        for (const row of gone) {
          await cancelJob(tx, HOSTNAME_CHECK, row.hostname);
          await hostnameEvent(
            tx,
            null,
            row,
            "hostname",
            "disconnected",
            `${row.hostname} was released: the app ${app} was deleted`,
            { reason: "app_deleted", event: event.id },
          );
        }
        return gone;
      });
      for (const row of released) announceHostChanged(ctx, row.hostname);
      if (released.length)
        log.info("released hostnames of a deleted app", { app, hostnames: released.map((r) => r.hostname) });
    },
  });
}
