import { bindRpc, type RpcBinding } from "@hatch/platform";
import { DeveloperReferenceInputSchema, type DeveloperReference } from "@hatch/contracts";
import { appsRootOrigin } from "../config.ts";
import type { AppsContext } from "../context.ts";
import { developerReference } from "../reference/reference.ts";

/**
 * `rpc.apps.reference`: the developer reference for the gateway's /mcp/docs, the same text `service_docs` gives (app
 * addresses under this service's apps domain). Public text, so no context is asked for: the page is open to anyone.
 */
export function developerReferenceRpc(ctx: Pick<AppsContext, "config">): RpcBinding {
  return bindRpc(
    DeveloperReferenceInputSchema,
    async ({ input }): Promise<DeveloperReference> => ({
      markdown: developerReference(input.topic, { appsOrigin: appsRootOrigin(ctx.config) }),
    }),
    { requiresContext: false },
  );
}
