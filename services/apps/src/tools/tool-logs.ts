import { bindTool } from "@hatch/platform";
import { tool_logs, ToolError, type CallContext } from "@hatch/contracts";
import { and, eq } from "drizzle-orm";
import { notFound, notTheirs, ORG_MANAGER_ROLES, type AppRow } from "../apps-repo.ts";
import type { AppsContext } from "../context.ts";
import { appsTable, versions } from "../db/schema.ts";
import { readAppLogs } from "../app-logs.ts";

// tool_logs: the newest lines an app's server code logged, for the app's owner only (the interface spec's rule: a
// manager of the organization is refused by name; someone who can see the app is told whose it is; anyone else learns
// nothing about the app).

export function toolLogsTool(apps: AppsContext) {
  return bindTool(tool_logs, async ({ ctx, input }) => {
    const app = await requireLogsOwner(apps, ctx, input.address);
    // Lines this process still holds in memory are written first, so a line logged a moment ago is there.
    await apps.appLogs.flush();
    const { lines, truncated } = await readAppLogs(apps.db, app.id, input.level, input.limit);
    const out = lines.map((line) => ({ time: line.at.toISOString(), level: line.level, message: line.message }));
    const data = { address: app.address, lines: out, truncated };
    if (out.length > 0) {
      const head = `${out.length} ${input.level ? `${input.level}+ ` : ""}log lines of ${app.address}, oldest first${truncated ? " (older lines exist: raise limit or narrow level)" : ""}:`;
      return { text: [head, ...out.map((line) => `${line.time} ${line.level} ${line.message}`)].join("\n"), data };
    }
    const hasServer = await hasServerCode(apps, app.id, app.currentVersion);
    const text = !hasServer
      ? `${app.address} has no server code, so it has no logs. Add "server": "api/index.js" to its service.json (see service_docs, topic server_code).`
      : input.level
        ? `${app.address} has no ${input.level} lines or more severe ones. Leave level out to see every line.`
        : `${app.address} has logged nothing yet. Lines come from console.log / console.error in its server code and from failed requests.`;
    return { text, data };
  });
}

/**
 * The app at `address` if the caller owns it: only the owner reads an app's logs (tool_logs and the dashboard's logs
 * page alike). A manager of its organization is refused by name; someone who can see the app is told whose it is;
 * anyone else gets the answer of a missing app.
 */
export async function requireLogsOwner(apps: AppsContext, ctx: CallContext, address: string): Promise<AppRow> {
  const [app] = await apps.db.select().from(appsTable).where(eq(appsTable.address, address));
  if (!app) throw notFound(address);
  if (app.ownerId === ctx.sub) return app;
  const manager =
    ctx.org !== null &&
    ctx.org !== undefined &&
    ctx.org === app.accountId &&
    ORG_MANAGER_ROLES.includes(ctx.role ?? "");
  if (!manager) throw await notTheirs(apps.db, ctx, app, "read its logs");
  throw new ToolError(
    "forbidden",
    `Only the owner of ${app.address} may read its logs (they can hold what its users sent). Ask ${app.ownerEmail} to read them.`,
  );
}

async function hasServerCode(apps: AppsContext, appId: string, version: number | null): Promise<boolean> {
  if (version === null) return false;
  const [row] = await apps.db
    .select({ config: versions.config })
    .from(versions)
    .where(and(eq(versions.appId, appId), eq(versions.number, version)))
    .limit(1);
  return typeof row?.config.server === "string";
}
