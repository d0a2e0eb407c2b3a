import type { HatchEvent } from "@hatch/contracts";
import { and, desc, eq, gte, lt, type SQL } from "drizzle-orm";
import type { Tx } from "./accounts.ts";
import { activity } from "./schema.ts";

/** Applies an event to the log once: a second delivery of the same id changes nothing. */
export async function recordActivity(db: Tx, event: HatchEvent): Promise<boolean> {
  if (!event.account) return false;
  const rows = await db
    .insert(activity)
    .values({
      eventId: event.id,
      accountId: event.account,
      time: new Date(event.time),
      service: event.service,
      action: `${event.entity}.${event.verb}`,
      app: event.app,
      actorUserId: event.actor?.userId ?? null,
      actorEmail: event.actor?.email.toLowerCase() ?? null,
      actorName: event.actor?.name ?? null,
      clientKind: event.client?.kind ?? null,
      clientName: event.client?.name ?? null,
      grantId: event.grant,
      summary: event.summary,
      event,
    })
    .onConflictDoNothing()
    .returning({ eventId: activity.eventId });
  return rows.length > 0;
}

export interface ActivityFilters {
  /** YYYY-MM-DD, UTC, inclusive. */
  from?: string;
  to?: string;
  person?: string;
  app?: string;
  action?: string;
  limit: number;
}

/** The newest `limit` entries matching the filters, and whether older ones match too. */
export async function queryActivity(db: Tx, accountId: string, filters: ActivityFilters) {
  const where: SQL[] = [eq(activity.accountId, accountId)];
  if (filters.from) where.push(gte(activity.time, new Date(`${filters.from}T00:00:00Z`)));
  if (filters.to) where.push(lt(activity.time, new Date(new Date(`${filters.to}T00:00:00Z`).getTime() + 86_400_000)));
  if (filters.person) where.push(eq(activity.actorEmail, filters.person.toLowerCase()));
  if (filters.app) where.push(eq(activity.app, filters.app));
  if (filters.action) where.push(eq(activity.action, filters.action));
  const rows = await db
    .select()
    .from(activity)
    .where(and(...where))
    .orderBy(desc(activity.time), desc(activity.recordedAt), desc(activity.eventId))
    .limit(filters.limit + 1);
  return { rows: rows.slice(0, filters.limit), hasMore: rows.length > filters.limit };
}
