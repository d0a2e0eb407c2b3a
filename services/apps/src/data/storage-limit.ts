import { checkLimitLocked, type Database } from "@hatch/platform";
import { formatBytes, type Entitlements } from "@hatch/contracts";
import { sql } from "drizzle-orm";
import type { AppsContext } from "../context.ts";
import { rowsOf } from "../db/rows.ts";
import { appsTable, dataUsage, documentUsage } from "../db/schema.ts";
import { DataError } from "../http/answers.ts";

// The plan's storage limit on data writes: documents and files of all the account's apps together, summed from the
// apps' `data_usage` (files) and `document_usage` (documents) rows, kept in each write's transaction. A write that adds bytes counts them in its transaction
// under the account's lock (shared checkLimitLocked), so writes at once cannot pass the limit together.

/** What the plan allows an account's data, read before the write's transaction (billing may share its connection). */
export interface StorageLimit {
  accountId: string;
  entitlements: Entitlements | null;
}

export async function storageLimitOf(ctx: Pick<AppsContext, "entitlements">, accountId: string): Promise<StorageLimit> {
  return { accountId, entitlements: (await ctx.entitlements?.get(accountId)) ?? null };
}

/** Bytes of documents and files all the account's apps hold now (also billing's storage usage, via rpc `storage`). */
export async function storedBytes(db: Pick<Database, "execute">, accountId: string): Promise<number> {
  const ofAccount = sql`select ${appsTable.id} from ${appsTable} where ${appsTable.accountId} = ${accountId}`;
  const [row] = rowsOf<{ bytes: string | null }>(
    await db.execute(sql`select
      coalesce((select sum(${dataUsage.fileBytes}) from ${dataUsage} where ${dataUsage.appId} in (${ofAccount})), 0)
      + coalesce((select sum(${documentUsage.bytes}) from ${documentUsage} where ${documentUsage.appId} in (${ofAccount})), 0)
      as bytes`),
  );
  return Number(row?.bytes ?? 0);
}

/** Whether a write of `adding` bytes is checked against a plan's storage at all (checkStorageLocked does nothing else). */
export function storageLimited(limit: StorageLimit | undefined, adding: number): limit is StorageLimit {
  const max = limit?.entitlements?.limits.storageBytes;
  return max !== null && max !== undefined && adding > 0;
}

/**
 * In the write's transaction, before anything else is locked: refuses with `needs_payment` a write of `adding`
 * bytes that would take the account past its plan's storage. The message is for the app's viewer, who is usually
 * not the one who pays.
 */
export function checkStorageLocked(
  tx: Pick<Database, "execute">,
  limit: StorageLimit | undefined,
  adding: number,
): Promise<void> {
  if (!limit) return Promise.resolve();
  const { accountId, entitlements } = limit;
  return checkLimitLocked(tx, {
    entitlements,
    limit: "storageBytes",
    accountId,
    adding,
    used: () => storedBytes(tx, accountId),
    refuse: (_used, max) =>
      new DataError(
        "needs_payment",
        `This app's storage is full: its owner's ${entitlements!.plan} plan allows ${formatBytes(max)} of data and files. The owner can upgrade at ${entitlements!.settingsUrl}; removing data frees room too.`,
      ),
  });
}
