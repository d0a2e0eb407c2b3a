import { AccountStorageInputSchema } from "@hatch/contracts";
import { bindRpc, type RpcBinding } from "@hatch/platform";
import type { AppsContext } from "../context.ts";
import { storedBytes } from "../data/storage-limit.ts";

/**
 * `rpc.apps.storage`: bytes of documents and files an account's apps hold, for billing's usage this month. Only a
 * number per account, which billing asks without a person's context (it reports it to that account's own people).
 */
export function accountStorageRpc(ctx: AppsContext): RpcBinding {
  return bindRpc(
    AccountStorageInputSchema,
    async ({ input }) => ({ bytes: await storedBytes(ctx.db, input.accountId) }),
    {
      requiresContext: false,
    },
  );
}
