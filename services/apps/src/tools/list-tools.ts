import { bindTool } from "@hatch/platform";
import { list_tools, plural, type ListToolsOutput } from "@hatch/contracts";
import { and, eq, inArray, ne, or, sql } from "drizzle-orm";
import { appUrl, iso, type AppRow } from "../apps-repo.ts";
import type { AppsContext } from "../context.ts";
import { appPeople, appsTable } from "../db/schema.ts";
import { opensByApp } from "../stats.ts";

/**
 * list_tools: apps the user owns, and apps others shared with them (with their organization, or by email once
 * the user verified that email: anyone can sign up with any address).
 */
export function listToolsTool(app: AppsContext) {
  return bindTool(list_tools, async ({ ctx, input }) => {
    const mine =
      input.include !== "shared" ? await app.db.select().from(appsTable).where(eq(appsTable.ownerId, ctx.sub)) : [];
    const shared =
      input.include !== "mine" ? await sharedWith(app, ctx.sub, ctx.emailVerified ? ctx.email : null, ctx.account) : [];
    const rows = [...mine, ...shared].sort((a, b) => b.updatedAt.getTime() - a.updatedAt.getTime());
    const opens = await opensByApp(
      app.db,
      rows.map((r) => r.id),
      7,
    );
    const apps: ListToolsOutput["apps"] = rows.map((row) => ({
      address: row.address,
      name: row.name,
      url: appUrl(app.config, row.address),
      visibility: row.visibility,
      aiDiscoverable: row.aiDiscoverable,
      opens7d: opens.get(row.id) ?? 0,
      currentVersion: row.currentVersion,
      sharedWithMe: row.ownerId !== ctx.sub,
      inAccount: row.accountId === ctx.account,
      owner: { email: row.ownerEmail, name: row.ownerName },
      paused: row.paused,
      updatedAt: iso(row.updatedAt),
    }));
    const text = apps.length === 0 ? emptyText(input.include) : apps.map(describe).join("\n");
    return { text, data: { apps } };
  });
}

async function sharedWith(
  app: AppsContext,
  userId: string,
  email: string | null,
  account: string | undefined,
): Promise<AppRow[]> {
  const byEmail = email
    ? app.db.select({ id: appPeople.appId }).from(appPeople).where(eq(appPeople.email, email.toLowerCase()))
    : null;
  const visibleToMe = or(
    byEmail ? and(eq(appsTable.visibility, "people"), inArray(appsTable.id, byEmail)) : sql`false`,
    account ? and(eq(appsTable.visibility, "org"), eq(appsTable.accountId, account)) : sql`false`,
  );
  return app.db
    .select()
    .from(appsTable)
    .where(and(ne(appsTable.ownerId, userId), visibleToMe));
}

function describe(a: ListToolsOutput["apps"][number]): string {
  const version = a.currentVersion === null ? "nothing published" : `v${a.currentVersion}`;
  const flags = [a.sharedWithMe ? `shared by ${a.owner.email}` : null, a.paused ? "PAUSED" : null]
    .filter(Boolean)
    .join(", ");
  return `- ${a.name} (${a.address}): ${a.url} — ${a.visibility}${a.aiDiscoverable ? " (AI-discoverable)" : ""}, ${version} of ${a.updatedAt.slice(0, 10)}, ${plural(a.opens7d, "open")} in 7 days${flags ? `, ${flags}` : ""}`;
}

function emptyText(include: string): string {
  if (include === "shared") return "Nobody has shared an app with you yet.";
  return "You have no apps yet. Build your app, then call publish with the built folder.";
}
