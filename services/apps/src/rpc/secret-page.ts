import { bindRpc } from "@hatch/platform";
import {
  SecretConfirmInputSchema,
  SecretPageInputSchema,
  SecretSetInputSchema,
  ToolError,
  type CallContext,
  type SecretPage,
} from "@hatch/contracts";
import { requireManagedApp, type AppRow } from "../apps-repo.ts";
import type { AppsContext } from "../context.ts";
import { bindingOf, shownDigest, unconfirmedUses } from "../secrets/destinations.ts";
import { confirmDestinations, secretStatus, setSecret, type SecretStatus } from "../secrets/store.ts";
import { apisUsing, type SecretUse } from "../secrets/usage.ts";

// The gateway's secret page (/dashboard/apps/<address>/secrets/<NAME>): who may see it and set a value is exactly who
// may call tool_secret, the app's owner or a manager of its organization, checked on the person's own signed ctx.
// A value arrives only in secret.set and never goes back out. The page shows where the value goes (each api's base
// url and placement); saving binds the value to exactly those destinations, and after a publish that moves one, the
// person confirms the new one there (secret.confirm). Both carry the digest of what the page showed (`shown`): when a
// publish came in between, nothing is saved and the page shows the destinations again.

function requireContext(ctx: CallContext | null): CallContext {
  if (!ctx) throw new ToolError("forbidden", "Sign in to manage secrets.");
  return ctx;
}

function requireWrite(ctx: CallContext | null): CallContext {
  const caller = requireContext(ctx);
  if (caller.scope !== "write")
    throw new ToolError("forbidden", "This page was opened read-only; reload it and try again.");
  return caller;
}

function pageOf(app: AppRow, name: string, uses: SecretUse[], status: SecretStatus): SecretPage {
  const waiting = new Map(
    (status.isSet ? unconfirmedUses(status.destinations, uses) : []).map((u) => [u.api, u.was] as const),
  );
  return {
    address: app.address,
    appName: app.name,
    name,
    apis: uses.map((use) => ({
      name: use.name,
      url: use.url,
      in: use.in,
      confirmed: status.isSet && !waiting.has(use.name),
      was: waiting.get(use.name) ?? null,
    })),
    shown: shownDigest(uses),
    isSet: status.isSet,
    updatedAt: status.updatedAt,
    updatedBy: status.updatedBy,
  };
}

/** The apis that use the secret now, or `conflict` when they are not what the page showed. */
async function usesAsShown(apps: AppsContext, app: AppRow, name: string, shown: string): Promise<SecretUse[]> {
  const uses = await apisUsing(apps, app, name);
  if (shownDigest(uses) !== shown)
    throw new ToolError(
      "conflict",
      "The app's APIs changed since this page was opened. Nothing was saved: check where the secret goes and try again.",
    );
  return uses;
}

/** What the page shows: the app, the secret, the apis that use it and where it goes, whether a value is set and by whom. */
export function secretPageRpc(apps: AppsContext) {
  return bindRpc(SecretPageInputSchema, async ({ ctx, input }): Promise<SecretPage> => {
    const app = await requireManagedApp(apps.db, requireContext(ctx), input.address);
    const [uses, status] = await Promise.all([
      apisUsing(apps, app, input.name),
      secretStatus(apps.db, app.id, input.name),
    ]);
    return pageOf(app, input.name, uses, status);
  });
}

/** Stores the value the person typed (sealed, with an app event that names only the secret), bound to what they saw. */
export function secretSetRpc(apps: AppsContext) {
  return bindRpc(
    SecretSetInputSchema,
    async ({ ctx, input, log }): Promise<SecretPage> => {
      const caller = requireWrite(ctx);
      const app = await requireManagedApp(apps.db, caller, input.address);
      const uses = await usesAsShown(apps, app, input.name, input.shown);
      const status = await setSecret(apps, caller, app, input.name, input.value, bindingOf(uses));
      log.info("secret set", { address: app.address, secret: input.name, user: caller.sub });
      return pageOf(app, input.name, uses, status);
    },
    { writes: true },
  );
}

/** The person confirms the destinations the page showed for the value already set. */
export function secretConfirmRpc(apps: AppsContext) {
  return bindRpc(
    SecretConfirmInputSchema,
    async ({ ctx, input, log }): Promise<SecretPage> => {
      const caller = requireWrite(ctx);
      const app = await requireManagedApp(apps.db, caller, input.address);
      const uses = await usesAsShown(apps, app, input.name, input.shown);
      if (!(await confirmDestinations(apps, caller, app, input.name, bindingOf(uses))))
        throw new ToolError("invalid_input", `${input.name} has no value yet: type it on this page.`);
      log.info("secret destinations confirmed", { address: app.address, secret: input.name, user: caller.sub });
      return pageOf(app, input.name, uses, await secretStatus(apps.db, app.id, input.name));
    },
    { writes: true },
  );
}
