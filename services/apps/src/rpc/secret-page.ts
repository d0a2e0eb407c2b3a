import {
  bindRpc,
  SecretPageInputSchema,
  SecretSetInputSchema,
  ToolError,
  type CallContext,
  type SecretPage,
} from "@hatch/shared";
import { requireManagedApp, type AppRow } from "../apps-repo.ts";
import type { AppsContext } from "../context.ts";
import { secretStatus, setSecret, type SecretStatus } from "../secrets/store.ts";
import { apisUsing } from "../secrets/usage.ts";

// The gateway's secret page (/dashboard/apps/<address>/secrets/<NAME>): who may see it and set a value is exactly who
// may call tool_secret, the app's owner or a manager of its organization, checked on the person's own signed ctx.
// A value arrives only in secret.set and never goes back out.

function requireContext(ctx: CallContext | null): CallContext {
  if (!ctx) throw new ToolError("forbidden", "Sign in to manage secrets.");
  return ctx;
}

async function pageOf(apps: AppsContext, app: AppRow, name: string, status: SecretStatus): Promise<SecretPage> {
  return { address: app.address, appName: app.name, name, apis: await apisUsing(apps, app, name), ...status };
}

/** What the page shows: the app, the secret, the apis that use it, whether a value is set and by whom. */
export function secretPageRpc(apps: AppsContext) {
  return bindRpc(SecretPageInputSchema, async ({ ctx, input }): Promise<SecretPage> => {
    const app = await requireManagedApp(apps.db, requireContext(ctx), input.address);
    return pageOf(apps, app, input.name, await secretStatus(apps.db, app.id, input.name));
  });
}

/** Stores the value the person typed (sealed, with an app event that names only the secret). */
export function secretSetRpc(apps: AppsContext) {
  return bindRpc(
    SecretSetInputSchema,
    async ({ ctx, input, log }): Promise<SecretPage> => {
      const caller = requireContext(ctx);
      if (caller.scope !== "write")
        throw new ToolError("forbidden", "This page was opened read-only; reload it and try again.");
      const app = await requireManagedApp(apps.db, caller, input.address);
      const status = await setSecret(apps, caller, app, input.name, input.value);
      log.info("secret set", { address: app.address, secret: input.name, user: caller.sub });
      return pageOf(apps, app, input.name, status);
    },
    { writes: true },
  );
}
