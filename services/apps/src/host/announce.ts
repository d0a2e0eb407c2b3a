import { decodeJson, encodeJson, type Bus, type BusSubscription, type Logger } from "@hatch/platform";
import { subjects } from "@hatch/contracts";
import type { AppsContext } from "../context.ts";

/**
 * Tell every apps instance that an app changed (publish, rollback, share, delete, pause), so its app host stops
 * serving the cached copy. Call it after the change's transaction committed. This instance drops its copy at once;
 * the others on the broadcast (and within the cache TTL even if they missed it).
 */
export function announceAppChanged(ctx: Pick<AppsContext, "bus" | "host" | "logger">, address: string): void {
  ctx.host?.invalidate(address);
  try {
    ctx.bus.publish(subjects.appsCacheInvalidate, encodeJson({ address }));
  } catch (error) {
    // The change is committed; other instances pick it up when their entry's TTL runs out.
    ctx.logger.warn("app change not broadcast", { address, error });
  }
}

/** Every instance hears every broadcast: no queue group. */
export function onAppChanged(bus: Bus, logger: Logger, invalidate: (address: string) => void): BusSubscription {
  return bus.subscribe(subjects.appsCacheInvalidate, (msg) => {
    let address: unknown;
    try {
      address = (decodeJson(msg.data) as { address?: unknown }).address;
    } catch {
      address = undefined;
    }
    if (typeof address === "string") invalidate(address);
    else logger.warn("ignored a malformed app change broadcast");
  });
}
