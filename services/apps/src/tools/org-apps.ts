import { bindTool } from "@hatch/platform";
import { org_apps, plural, ToolError, type CallContext } from "@hatch/contracts";
import { and, asc, eq, gte, inArray, sql, sum, type SQL } from "drizzle-orm";
import { appOrigin } from "../config.ts";
import type { AppsContext } from "../context.ts";
import { appsTable, dailyOpens } from "../db/schema.ts";

/** The caller's organization id, or a clear refusal for a personal account. */
export function requireOrgOf(ctx: CallContext): string {
  if (!ctx.org) {
    throw new ToolError(
      "forbidden",
      "You are not in an organization (this is a personal account), so there are no organization apps. list_tools lists your own apps; org_setup creates an organization.",
    );
  }
  return ctx.org;
}

const sevenDaysAgo = () => new Date(Date.now() - 6 * 86_400_000).toISOString().slice(0, 10);

export function orgAppsTool(apps: AppsContext) {
  return bindTool(org_apps, async ({ ctx, input }) => {
    const org = requireOrgOf(ctx);
    const where: SQL[] = [eq(appsTable.accountId, org)];
    if (input.owner) where.push(eq(sql`lower(${appsTable.ownerEmail})`, input.owner.toLowerCase()));
    if (input.paused !== undefined) where.push(eq(appsTable.paused, input.paused));
    const rows = await apps.db
      .select()
      .from(appsTable)
      .where(and(...where))
      .orderBy(asc(appsTable.name), asc(appsTable.address));
    const opens = rows.length
      ? await apps.db
          .select({ appId: dailyOpens.appId, opens: sum(dailyOpens.opens).mapWith(Number) })
          .from(dailyOpens)
          .where(
            and(
              inArray(
                dailyOpens.appId,
                rows.map((r) => r.id),
              ),
              gte(dailyOpens.day, sevenDaysAgo()),
            ),
          )
          .groupBy(dailyOpens.appId)
      : [];
    const opensOf = new Map(opens.map((o) => [o.appId, o.opens]));
    const list = rows.map((row) => ({
      address: row.address,
      name: row.name,
      url: appOrigin(apps.config, row.address),
      owner: { email: row.ownerEmail, name: row.ownerName },
      visibility: row.visibility,
      paused: row.paused,
      currentVersion: row.currentVersion,
      opens7d: opensOf.get(row.id) ?? 0,
      updatedAt: row.updatedAt.toISOString(),
    }));
    const lines = list.map(
      (a) =>
        `- ${a.name} (${a.address}): ${a.url} by ${a.owner.email}, ${a.visibility}${a.paused ? ", PAUSED" : ""}, ` +
        `${a.currentVersion === null ? "nothing published" : `v${a.currentVersion}`} of ${a.updatedAt.slice(0, 10)}, ${plural(a.opens7d, "open")} in 7 days`,
    );
    const text = list.length
      ? `${plural(list.length, "app")} in the organization:\n${lines.join("\n")}`
      : "No apps in the organization match.";
    return { text, data: { apps: list } };
  });
}
