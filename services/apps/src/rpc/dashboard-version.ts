import { bindRpc, type RpcBinding } from "@hatch/platform";
import {
  DASHBOARD_VERSION_FILES_MAX,
  DashboardVersionInputSchema,
  ToolError,
  type DashboardVersion,
} from "@hatch/contracts";
import { and, asc, eq } from "drizzle-orm";
import { iso, requireOwnedApp } from "../apps-repo.ts";
import { previewOrigin } from "../config.ts";
import type { AppsContext } from "../context.ts";
import { versionFiles, versions } from "../db/schema.ts";

/**
 * `rpc.apps.dashboard.version` (signed ctx): one version of an app for the dashboard's version page: who published it
 * and from which client, and its files (path, size, type; never their contents). Who may see it is who may roll back
 * to it (requireOwnedApp, the owner); anyone else reads it as a missing app. A non-current version also has its
 * preview's address (host/preview.ts), unless its Host label would be too long for DNS (host-names.ts previewLabel).
 */
export function dashboardVersionRpc(apps: AppsContext): RpcBinding {
  return bindRpc(DashboardVersionInputSchema, async ({ ctx, input }): Promise<DashboardVersion> => {
    if (!ctx) throw new ToolError("forbidden", "Sign in first.");
    const app = await requireOwnedApp(apps.db, ctx, input.address, { action: "manage it" });
    const [version] = await apps.db
      .select()
      .from(versions)
      .where(and(eq(versions.appId, app.id), eq(versions.number, input.version)))
      .limit(1);
    if (!version) throw new ToolError("not_found", `${app.name} has no version ${input.version}.`);
    const files = await apps.db
      .select({ path: versionFiles.path, size: versionFiles.size, contentType: versionFiles.contentType })
      .from(versionFiles)
      .where(and(eq(versionFiles.appId, app.id), eq(versionFiles.version, input.version)))
      .orderBy(asc(versionFiles.path))
      .limit(DASHBOARD_VERSION_FILES_MAX);
    const current = version.number === app.currentVersion;
    const preview = current ? null : previewOrigin(apps.config, app.address, version.number);
    return {
      address: app.address,
      name: app.name,
      version: version.number,
      current,
      publishedAt: iso(version.createdAt),
      publishedBy: version.publisherEmail,
      publishedVia: version.publisherClient ?? null,
      fileCount: version.fileCount,
      totalBytes: version.totalBytes,
      files,
      ...(preview === null ? {} : { previewUrl: `${preview}/` }),
    };
  });
}
