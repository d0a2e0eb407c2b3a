import { bindRpc } from "@hatch/platform";
import { AccountAppsDeleteInputSchema, ToolError, type AccountApps, type CallContext } from "@hatch/contracts";
import { and, asc, eq, inArray, or } from "drizzle-orm";
import type { AppsContext } from "../context.ts";
import { removeStoredBlobs } from "../blobs/unused.ts";
import { aiKeys, appsTable, storageEscrow } from "../db/schema.ts";
import { removeApp } from "../tools/delete-tool.ts";

// A person deleting their account (the gateway's settings page): the apps they own in the accounts only they belong to
// go as delete_tool deletes one (addresses stay reserved), with their secrets, data and files, and their own AI keys
// and those accounts' keys go too. Only the person themselves, as the signed ctx says, asks; a retry finds less to do.

function requireSelf(ctx: CallContext | null, userId: string): CallContext {
  if (!ctx || ctx.sub !== userId)
    throw new ToolError("forbidden", "Only the person themselves can delete their account.");
  return ctx;
}

const theirApps = (userId: string, accountIds: string[]) =>
  and(eq(appsTable.ownerId, userId), inArray(appsTable.accountId, accountIds.length ? accountIds : [""]));

/** `account.apps`: what the deletion would delete (the confirm step lists it). */
export function accountAppsRpc(apps: AppsContext) {
  return bindRpc(AccountAppsDeleteInputSchema, async ({ ctx, input }): Promise<AccountApps> => {
    requireSelf(ctx, input.userId);
    const rows = await apps.db
      .select({ address: appsTable.address, name: appsTable.name })
      .from(appsTable)
      .where(theirApps(input.userId, input.accountIds))
      .orderBy(asc(appsTable.name), asc(appsTable.address));
    return { apps: rows };
  });
}

/** `account.delete`: deletes them in one transaction, with an `app.deleted` event each. */
export function accountDeleteRpc(apps: AppsContext) {
  return bindRpc(
    AccountAppsDeleteInputSchema,
    async ({ ctx, input }): Promise<AccountApps> => {
      const caller = requireSelf(ctx, input.userId);
      const done = await apps.db.transaction(async (tx) => {
        const rows = await tx
          .select()
          .from(appsTable)
          .where(theirApps(input.userId, input.accountIds))
          .orderBy(asc(appsTable.address))
          .for("update");
        const orphans: string[] = [];
        // Each app's event names its own account (the app's), as delete_tool's does.
        for (const row of rows) orphans.push(...(await removeApp(tx, { ...caller, account: row.accountId }, row)));
        const keyOwners = [
          and(eq(aiKeys.scope, "mine"), eq(aiKeys.ownerId, input.userId)),
          ...(input.accountIds.length
            ? [and(eq(aiKeys.scope, "company"), inArray(aiKeys.ownerId, input.accountIds))]
            : []),
        ];
        await tx.delete(aiKeys).where(or(...keyOwners));
        // The deleted accounts' storage escrow (shares of room nothing can use any more).
        if (input.accountIds.length)
          await tx.delete(storageEscrow).where(inArray(storageEscrow.accountId, input.accountIds));
        return { apps: rows.map((r) => ({ address: r.address, name: r.name })), orphans };
      });
      // Each app host drops the deleted apps on their app.deleted events (flushed before this answers: writes).
      await removeStoredBlobs(apps, done.orphans);
      apps.logger.info("account apps deleted", { userId: input.userId, apps: done.apps.length });
      return { apps: done.apps };
    },
    { writes: true },
  );
}
