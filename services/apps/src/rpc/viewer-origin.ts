import { bindRpc, ViewerOriginInputSchema, type RpcBinding, type ViewerOrigin } from "@hatch/shared";
import { appOrigin } from "../config.ts";
import type { AppsContext } from "../context.ts";

/**
 * `rpc.apps.viewer.origin`: where the gateway sends a viewer it signed in for an app. Requires the gateway's
 * signed context (only the gateway, acting for a signed-in person, asks). The answer is computed from the address
 * and the configuration alone, never from the database, so it says nothing about whether the app exists or who
 * may see it: a stranger learns no more than the app host's own redirect to the sign-in page already shows.
 */
export function viewerOriginRpc(ctx: AppsContext): RpcBinding {
  return bindRpc(
    ViewerOriginInputSchema,
    async ({ input }): Promise<ViewerOrigin> => ({ origin: appOrigin(ctx.config, input.address) }),
    {
      requiresContext: true,
    },
  );
}
