import { AppLookupInputSchema, ToolError, type AppLookup } from "@hatch/contracts";
import { bindRpc, type RpcBinding } from "@hatch/platform";
import { requireManagedApp, resolveAppRef } from "../apps-repo.ts";
import { appOrigin } from "../config.ts";
import type { AppsContext } from "../context.ts";

/**
 * `rpc.apps.app.lookup` (signed ctx): the app at an address (or given by its URL or name, as tools take it) if the caller may manage it (its owner, or the owner, an
 * admin or a manager of its organization acting there). Anyone else gets exactly the answer of a missing app. The
 * domains service asks before putting an app on a hostname or listing its hostnames.
 */
export function appLookupRpc(apps: AppsContext): RpcBinding {
  return bindRpc(AppLookupInputSchema, async ({ ctx, input }): Promise<AppLookup> => {
    if (!ctx) throw new ToolError("forbidden", "Sign in first.");
    const app = await requireManagedApp(apps.db, ctx, await resolveAppRef(apps.db, ctx, input.address));
    return {
      appId: app.id,
      address: app.address,
      name: app.name,
      accountId: app.accountId,
      ownerId: app.ownerId,
      url: appOrigin(apps.config, app.address),
    };
  });
}
