import { decodeJson, type Bus, type BusSubscription, type Logger } from "@hatch/platform";

/** Every event about an app (`events.apps.app.<verb>`): publish, share, rollback, delete, pause, owner, AI choice, … */
export const APP_EVENTS = "events.apps.app.>";

/**
 * The app host's cached apps follow the apps events: each event the outbox relay publishes about an app drops that
 * app's cached copy on every apps copy (a plain subscription, no queue group: every copy hears every event). Nothing
 * calls this after a commit by hand: a change writes its event in its transaction, and the runtime flushes the
 * outbox before the tool answers, so the copy that made the change has dropped its copy by the time the caller hears
 * back (in-process bus: before; NATS: the event reaches this copy's connection before the stream's acknowledgement).
 * An event that never arrives (the bus was down) leaves a stale entry for at most the cache's TTL (AppCache, 10 s).
 */
export function followAppEvents(bus: Bus, log: Logger, invalidate: (address: string) => void): BusSubscription {
  return bus.subscribe(APP_EVENTS, (msg) => {
    let address: unknown;
    try {
      address = (decodeJson(msg.data) as { app?: unknown }).app;
    } catch {
      address = undefined;
    }
    if (typeof address === "string") invalidate(address);
    else log.warn("ignored an app event without an app");
  });
}
