import { bindRpc, type RpcBinding } from "@hatch/platform";
import { ToolError, ViewerOriginInputSchema, type ViewerOrigin } from "@hatch/contracts";
import { and, eq } from "drizzle-orm";
import { appOrigin, previewOrigin } from "../config.ts";
import type { AppsContext } from "../context.ts";
import { appsTable } from "../db/schema.ts";

/**
 * `rpc.apps.viewer.origin`: where the gateway sends a viewer it signed in for an app. Requires the gateway's
 * signed context (only the gateway, acting for a signed-in person, asks). The origin is computed from the address
 * and the configuration alone, so it says nothing about whether the app exists or who may see it. A public app
 * (anyone can open it, so its existence is no secret) also answers `public`: its id, name, account and owner, which
 * the gateway's consent page names and uses to tell whether the viewer needs to agree at all. With `version`, the
 * origin of that version's preview (never a consent page: only the owner is served there, checked by the app host).
 */
export function viewerOriginRpc(ctx: AppsContext): RpcBinding {
  return bindRpc(
    ViewerOriginInputSchema,
    async ({ input }): Promise<ViewerOrigin> => {
      if (input.version !== undefined) {
        const origin = previewOrigin(ctx.config, input.address, input.version);
        if (origin === null) throw new ToolError("not_found", "That version has no preview address.");
        return { origin };
      }
      const origin = appOrigin(ctx.config, input.address);
      const [app] = await ctx.db
        .select({
          id: appsTable.id,
          name: appsTable.name,
          account: appsTable.accountId,
          ownerId: appsTable.ownerId,
          ownerName: appsTable.ownerName,
        })
        .from(appsTable)
        .where(and(eq(appsTable.address, input.address), eq(appsTable.visibility, "public")))
        .limit(1);
      if (!app) return { origin };
      return {
        origin,
        public: { id: app.id, name: app.name, account: app.account, owner: { id: app.ownerId, name: app.ownerName } },
      };
    },
    {
      requiresContext: true,
    },
  );
}
