import type { Database } from "@hatch/platform";
import { and, gte, inArray, sql } from "drizzle-orm";
import { dailyOpens } from "./db/schema.ts";

/** `YYYY-MM-DD` (UTC) of the day `daysAgo` days before `now`. */
export function utcDay(now: Date, daysAgo = 0): string {
  return new Date(now.getTime() - daysAgo * 86_400_000).toISOString().slice(0, 10);
}

/** Opens per app over the last `days` days, today included (apps without opens are absent). */
export async function opensByApp(
  db: Database,
  appIds: readonly string[],
  days: number,
  now = new Date(),
): Promise<Map<string, number>> {
  if (appIds.length === 0) return new Map();
  const rows = await db
    .select({ appId: dailyOpens.appId, opens: sql<number>`sum(${dailyOpens.opens})::int` })
    .from(dailyOpens)
    .where(and(inArray(dailyOpens.appId, [...appIds]), gte(dailyOpens.day, utcDay(now, days - 1))))
    .groupBy(dailyOpens.appId);
  return new Map(rows.map((r) => [r.appId, Number(r.opens)]));
}
