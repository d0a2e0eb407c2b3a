import { AiKeySetInputSchema, AiKeyTargetSchema, ToolError, type AiKeyPage, type CallContext } from "@hatch/contracts";
import { bindRpc } from "@hatch/platform";
import { keysOf, resolveKeyOwner, setAiKey, type KeyOwner } from "../ai/keys.ts";
import type { AppsContext } from "../context.ts";

// The gateway's AI key page (/dashboard/ai-keys): what it shows and the one way a key reaches Hatch. The ctx is the
// person's own, signed by the gateway for the page, so the checks are exactly those of the ai_key tool.

function signedIn(ctx: CallContext | null): CallContext {
  if (!ctx) throw new ToolError("forbidden", "Sign in to manage AI keys.");
  return ctx;
}

async function pageOf(apps: AppsContext, owner: KeyOwner): Promise<AiKeyPage> {
  return {
    scope: owner.scope,
    address: owner.app?.address ?? null,
    owner: owner.label,
    providers: [...apps.config.aiProviders].map(([name, url]) => ({ name, url })),
    keys: (await keysOf(apps.db, owner)).map(({ provider, addedAt, addedBy }) => ({ provider, addedAt, addedBy })),
  };
}

/** `ai-key.page`: whose keys these are, the providers Hatch offers, and the keys that exist (never a key). */
export function aiKeyPageRpc(apps: AppsContext) {
  return bindRpc(AiKeyTargetSchema, async ({ ctx, input }): Promise<AiKeyPage> => {
    const owner = await resolveKeyOwner(apps.db, signedIn(ctx), input.scope, input.address);
    return pageOf(apps, owner);
  });
}

/** `ai-key.set`: stores (or replaces) the key the person typed; answers the page again, without it. */
export function aiKeySetRpc(apps: AppsContext) {
  return bindRpc(
    AiKeySetInputSchema,
    async ({ ctx, input }): Promise<AiKeyPage> => {
      const caller = signedIn(ctx);
      if (caller.scope === "read")
        throw new ToolError("forbidden", "This session is read-only; sign in again to add a key.");
      const owner = await resolveKeyOwner(apps.db, caller, input.scope, input.address);
      if (!apps.config.aiProviders.has(input.provider)) {
        throw new ToolError(
          "invalid_input",
          `Hatch does not offer the AI provider "${input.provider}". Pick one of: ${[...apps.config.aiProviders.keys()].join(", ")}.`,
        );
      }
      await setAiKey(apps, caller, owner, input.provider, input.key);
      apps.logger.info("AI key set", { scope: owner.scope, owner: owner.ownerId, provider: input.provider });
      return pageOf(apps, owner);
    },
    { writes: true },
  );
}
