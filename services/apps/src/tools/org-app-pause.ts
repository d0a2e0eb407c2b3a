import { bindTool } from "@hatch/platform";
import { org_app_pause, ToolError } from "@hatch/contracts";
import { and, eq } from "drizzle-orm";
import { ORG_MANAGER_ROLES } from "../apps-repo.ts";
import type { AppsContext } from "../context.ts";
import { appsTable } from "../db/schema.ts";
import { appEvent } from "../events.ts";
import { requireOrgOf } from "./org-apps.ts";

export function orgAppPauseTool(apps: AppsContext) {
  return bindTool(org_app_pause, async ({ ctx, input }) => {
    const org = requireOrgOf(ctx);
    if (!ORG_MANAGER_ROLES.includes(ctx.role ?? "")) {
      throw new ToolError(
        "forbidden",
        `Only the owner, admins and managers of the organization pause or unpause apps; you are a ${ctx.role ?? "member"}. Nothing was changed.`,
      );
    }
    const verb = input.paused ? "paused" : "unpaused";
    const changed = await apps.db.transaction(async (tx) => {
      const [app] = await tx
        .select({
          id: appsTable.id,
          address: appsTable.address,
          name: appsTable.name,
          accountId: appsTable.accountId,
          paused: appsTable.paused,
        })
        .from(appsTable)
        .where(and(eq(appsTable.address, input.address), eq(appsTable.accountId, org)))
        .limit(1)
        .for("update");
      // An app of another account looks exactly like one that does not exist.
      if (!app)
        throw new ToolError(
          "not_found",
          `The organization has no app at the address ${input.address}. org_apps lists its apps.`,
        );
      if (app.paused === input.paused) return false;
      await tx
        .update(appsTable)
        .set({
          paused: input.paused,
          pausedReason: input.paused ? (input.reason ?? null) : null,
          updatedAt: new Date(),
        })
        .where(eq(appsTable.id, app.id));
      await appEvent(tx, ctx, verb, app, input.reason ? { reason: input.reason } : {});
      return true;
    });
    const text = changed
      ? `${input.address} is now ${verb}${input.paused ? ": visitors get a page saying it is paused until it is unpaused; nothing was deleted" : " and answers visitors again"}.`
      : `${input.address} already was ${verb}; nothing changed.`;
    return { text, data: { address: input.address, paused: input.paused, changed } };
  });
}
