import { eventStreamFor, type EventConsumer } from "@hatch/platform";
import type { OrgsContext } from "./context.ts";
import { recordActivity } from "./db/activity.ts";

/**
 * Events that are not lines of the activity log: usage counted by billing, one per AI call and one per app and day
 * of opens (they would drown out what people did).
 */
const NOT_ACTIVITY = new Set(["apps.ai.used", "apps.app.opened"]);

/** The durable consumer every orgs instance shares: all events, from every service, into the activity log. */
export const ACTIVITY_CONSUMER = "orgs-activity";

/**
 * Applies events to the activity log. Durable: while orgs is down, events wait in the stream and arrive when
 * it starts again. Idempotent: an event delivered twice is recorded once (unique on its id).
 */
export function startActivityConsumer(orgs: OrgsContext): EventConsumer {
  const log = orgs.logger.child({ component: "activity" });
  return eventStreamFor(orgs.bus).consume({
    name: ACTIVITY_CONSUMER,
    filter: "events.>",
    logger: log,
    handler: async (event) => {
      if (NOT_ACTIVITY.has(`${event.service}.${event.entity}.${event.verb}`)) return;
      const added = await recordActivity(orgs.db, event);
      log.debug(added ? "activity recorded" : "activity already recorded", { event: event.id });
    },
  });
}
