import { bindRpc, type RpcBinding } from "@hatch/platform";
import { DashboardAppInputSchema, ToolError, type DashboardApp } from "@hatch/contracts";
import { desc, eq } from "drizzle-orm";
import { appUrl, iso, requireOwnedApp } from "../apps-repo.ts";
import type { AppsContext } from "../context.ts";
import { appPeople, secrets, versions } from "../db/schema.ts";

/**
 * `rpc.apps.dashboard.app` (signed ctx): what the dashboard's page of one app shows and no tool reads without
 * changing something: the people it is shared with, its versions and its secrets' names (never a value). Who may
 * see it is who may share, roll back or delete it (requireOwnedApp): anyone else is told whose it is when they can see
 * the app, and otherwise reads it as a missing one.
 */
export function dashboardAppRpc(apps: AppsContext): RpcBinding {
  return bindRpc(DashboardAppInputSchema, async ({ ctx, input }): Promise<DashboardApp> => {
    if (!ctx) throw new ToolError("forbidden", "Sign in first.");
    const app = await requireOwnedApp(apps.db, ctx, input.address, { action: "manage it" });
    const [people, rows, set] = await Promise.all([
      apps.db
        .select({ email: appPeople.email })
        .from(appPeople)
        .where(eq(appPeople.appId, app.id))
        .orderBy(appPeople.email),
      apps.db.select().from(versions).where(eq(versions.appId, app.id)).orderBy(desc(versions.number)),
      apps.db.select({ name: secrets.name }).from(secrets).where(eq(secrets.appId, app.id)),
    ]);
    const current = rows.find((v) => v.number === app.currentVersion);
    const declared = Object.values(
      ((current?.config ?? {}) as { apis?: Record<string, { secret?: unknown }> }).apis ?? {},
    ).flatMap((api) => (typeof api.secret === "string" ? [api.secret] : []));
    const isSet = new Set(set.map((s) => s.name));
    const names = [...new Set([...declared, ...isSet])].sort();
    return {
      address: app.address,
      name: app.name,
      url: appUrl(apps.config, app.address),
      visibility: app.visibility as DashboardApp["visibility"],
      aiDiscoverable: app.aiDiscoverable,
      paused: app.paused,
      people: people.map((p) => p.email),
      currentVersion: app.currentVersion,
      updatedAt: iso(app.updatedAt),
      versions: rows.map((v) => ({
        version: v.number,
        current: v.number === app.currentVersion,
        publishedAt: iso(v.createdAt),
        publishedBy: v.publisherEmail,
        publishedVia: v.publisherClient ?? null,
        fileCount: v.fileCount,
      })),
      secrets: names.map((name) => ({ name, isSet: isSet.has(name) })),
    };
  });
}
