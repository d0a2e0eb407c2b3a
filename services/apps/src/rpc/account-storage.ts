import { AccountStorageInputSchema } from "@hatch/contracts";
import { bindRpc, type RpcBinding } from "@hatch/platform";
import { count, eq } from "drizzle-orm";
import type { AppsContext } from "../context.ts";
import { appsTable } from "../db/schema.ts";
import { storedBytes } from "../data/storage-limit.ts";

/**
 * `rpc.apps.storage`: bytes of documents and files an account's apps hold, and how many apps it has, for billing's usage. Only a
 * number per account, which billing asks without a person's context (it reports it to that account's own people).
 */
export function accountStorageRpc(ctx: AppsContext): RpcBinding {
  return bindRpc(
    AccountStorageInputSchema,
    async ({ input }) => {
      const [bytes, [apps]] = await Promise.all([
        storedBytes(ctx.db, input.accountId),
        ctx.db.select({ n: count() }).from(appsTable).where(eq(appsTable.accountId, input.accountId)),
      ]);
      return { bytes, apps: apps?.n ?? 0 };
    },
    {
      requiresContext: false,
    },
  );
}
