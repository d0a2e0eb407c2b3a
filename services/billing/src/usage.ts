import { eventStreamFor, type Bus, type Database, type EventConsumer, type Logger } from "@hatch/platform";
import { type HatchEvent } from "@hatch/contracts";
import { sql } from "drizzle-orm";
import { countedEvents, usage } from "./db/schema.ts";

// Usage this month, counted from other services' events by a durable consumer (every billing instance shares it, and
// one that was down catches up when it returns). The stream delivers at least once; `counted_events` makes each
// event count exactly once: its id is recorded in the same transaction as the counts it adds.

export const USAGE_CONSUMER = "billing-usage";

interface Counts {
  opens?: number;
  aiTokens?: number;
  companyAiTokens?: number;
  domains?: number;
}

const whole = (value: unknown) =>
  typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;

/** What an event adds to its account's usage, and the day it counts on; null when it is not usage. */
export function usageOf(event: HatchEvent): { accountId: string; day: string; counts: Counts } | null {
  if (!event.account) return null;
  const kind = `${event.service}.${event.entity}.${event.verb}`;
  const day = event.time.slice(0, 10);
  switch (kind) {
    case "apps.app.opened": {
      const opens = whole(event.details.opens);
      const counted =
        typeof event.details.day === "string" && /^\d{4}-\d{2}-\d{2}$/.test(event.details.day)
          ? event.details.day
          : day;
      return opens > 0 ? { accountId: event.account, day: counted, counts: { opens } } : null;
    }
    case "apps.ai.used": {
      const tokens = whole(event.details.inputTokens) + whole(event.details.outputTokens);
      const payer = event.details.payer as { scope?: unknown } | undefined;
      const company = payer?.scope === "company" ? tokens : 0;
      return tokens > 0
        ? { accountId: event.account, day, counts: { aiTokens: tokens, companyAiTokens: company } }
        : null;
    }
    case "domains.domain.bought":
      return { accountId: event.account, day, counts: { domains: 1 } };
    case "domains.domain.refunded": {
      // A purchase that failed and was refunded is not a domain bought: off the month it was bought in. (A refunded
      // renewal leaves the count alone: the domain was bought.)
      if (event.details.purpose !== "purchase") return null;
      const boughtAt = event.details.boughtAt;
      const boughtDay =
        typeof boughtAt === "string" && /^\d{4}-\d{2}-\d{2}T/.test(boughtAt) ? boughtAt.slice(0, 10) : day;
      return { accountId: event.account, day: boughtDay, counts: { domains: -1 } };
    }
    default:
      return null;
  }
}

/** Counts one event, once: false when it was already counted or is not usage. */
export async function countUsage(db: Database, event: HatchEvent): Promise<boolean> {
  const found = usageOf(event);
  if (!found) return false;
  const month = `${found.day.slice(0, 7)}-01`;
  const { opens = 0, aiTokens = 0, companyAiTokens = 0, domains = 0 } = found.counts;
  return db.transaction(async (tx) => {
    const fresh = await tx
      .insert(countedEvents)
      .values({ eventId: event.id })
      .onConflictDoNothing()
      .returning({ id: countedEvents.eventId });
    if (fresh.length === 0) return false;
    await tx
      .insert(usage)
      .values({ accountId: found.accountId, month, opens, aiTokens, companyAiTokens, domains: Math.max(0, domains) })
      .onConflictDoUpdate({
        target: [usage.accountId, usage.month],
        set: {
          opens: sql`${usage.opens} + ${opens}`,
          aiTokens: sql`${usage.aiTokens} + ${aiTokens}`,
          companyAiTokens: sql`${usage.companyAiTokens} + ${companyAiTokens}`,
          domains: sql`greatest(0, ${usage.domains} + ${domains})`,
        },
      });
    return true;
  });
}

/** The durable usage consumer; stop it with the service. */
export function startUsageConsumer(deps: { db: Database; bus: Bus; logger: Logger }): EventConsumer {
  const log = deps.logger.child({ component: "usage" });
  return eventStreamFor(deps.bus).consume({
    name: USAGE_CONSUMER,
    filter: "events.>",
    logger: log,
    handler: async (event) => {
      const counted = await countUsage(deps.db, event);
      if (counted) log.debug("usage counted", { event: event.id });
    },
  });
}
