import { bindTool } from "@hatch/platform";
import { plural, tool_stats } from "@hatch/contracts";
import { and, countDistinct, eq, gte } from "drizzle-orm";
import { requireOwnedApp } from "../apps-repo.ts";
import type { AppsContext } from "../context.ts";
import { dailyOpens, dailyViewers } from "../db/schema.ts";
import { utcDay } from "../stats.ts";

/** tool_stats: opens and unique viewers per UTC day over the last `days` days (owner only). */
export function toolStatsTool(app: AppsContext) {
  return bindTool(tool_stats, async ({ ctx, input }) => {
    const target = await requireOwnedApp(app.db, ctx, input.address, { action: "read its statistics" });
    const now = new Date();
    const since = utcDay(now, input.days - 1);
    const [opens, viewers, [total]] = await Promise.all([
      app.db
        .select()
        .from(dailyOpens)
        .where(and(eq(dailyOpens.appId, target.id), gte(dailyOpens.day, since))),
      app.db
        .select({ day: dailyViewers.day, count: countDistinct(dailyViewers.viewer) })
        .from(dailyViewers)
        .where(and(eq(dailyViewers.appId, target.id), gte(dailyViewers.day, since)))
        .groupBy(dailyViewers.day),
      app.db
        .select({ count: countDistinct(dailyViewers.viewer) })
        .from(dailyViewers)
        .where(and(eq(dailyViewers.appId, target.id), gte(dailyViewers.day, since))),
    ]);
    const opensByDay = new Map(opens.map((r) => [r.day, r.opens]));
    const viewersByDay = new Map(viewers.map((r) => [r.day, Number(r.count)]));
    const days = Array.from({ length: input.days }, (_, i) => {
      const date = utcDay(now, input.days - 1 - i);
      return { date, opens: opensByDay.get(date) ?? 0, uniqueViewers: viewersByDay.get(date) ?? 0 };
    });
    const totalOpens = days.reduce((sum, d) => sum + d.opens, 0);
    const totalUniqueViewers = Number(total?.count ?? 0);
    const lines = days.map((d) => `${d.date}: ${plural(d.opens, "open")}, ${plural(d.uniqueViewers, "unique viewer")}`);
    return {
      text: `${target.address}, last ${plural(input.days, "day")}: ${plural(totalOpens, "open")} by ${plural(totalUniqueViewers, "unique viewer")}.\n${lines.join("\n")}`,
      data: { address: target.address, days, totalOpens, totalUniqueViewers },
    };
  });
}
