import { formatBytes } from "@hatch/shared";
import { eq, sql } from "drizzle-orm";
import type { AppsContext } from "../context.ts";
import { appsTable, dataUsage, documents } from "../db/schema.ts";
import { DataError } from "./access.ts";

// The plan's storage limit on data writes: documents and files of all the account's apps together. What an account
// stores is summed at most every few seconds per instance and counted forward in between, so a burst of writes costs
// one sum, not one per write. With N instances an account may pass its limit by what N instances let through in that
// window; the limit is a plan's, not a safety bound (those are DATA_LIMITS, checked in the write's transaction).

const FRESH_MS = 5_000;
const MAX_ACCOUNTS = 10_000;
const stored = new Map<string, { bytes: number; at: number }>();

/** Bytes of documents and files all the account's apps hold now (also billing's storage usage, via rpc `storage`). */
export async function storedBytes(ctx: Pick<AppsContext, "db">, accountId: string): Promise<number> {
  const [files] = await ctx.db
    .select({ bytes: sql<string>`coalesce(sum(${dataUsage.fileBytes}), 0)` })
    .from(dataUsage)
    .innerJoin(appsTable, eq(appsTable.id, dataUsage.appId))
    .where(eq(appsTable.accountId, accountId));
  const [docs] = await ctx.db
    .select({ bytes: sql<string>`coalesce(sum(${documents.bytes}), 0)` })
    .from(documents)
    .innerJoin(appsTable, eq(appsTable.id, documents.appId))
    .where(eq(appsTable.accountId, accountId));
  return Number(files?.bytes ?? 0) + Number(docs?.bytes ?? 0);
}

/**
 * Refuses with `needs_payment` a write of `adding` bytes that would take the account past its plan's storage; the
 * message is for the app's viewer, who is usually not the one who pays.
 */
export async function checkStorageLimit(ctx: AppsContext, accountId: string, adding: number): Promise<void> {
  const entitlements = await ctx.entitlements?.get(accountId);
  const limit = entitlements?.limits.storageBytes;
  if (!entitlements || limit === null || limit === undefined) return;
  const now = Date.now();
  let known = stored.get(accountId);
  if (!known || now - known.at > FRESH_MS) {
    known = { bytes: await storedBytes(ctx, accountId), at: now };
    if (stored.size >= MAX_ACCOUNTS) stored.delete(stored.keys().next().value!);
    stored.set(accountId, known);
  }
  if (known.bytes + adding > limit) {
    throw new DataError(
      "needs_payment",
      `This app's storage is full: its owner's ${entitlements.plan} plan allows ${formatBytes(limit)} of data and files. The owner can upgrade at ${entitlements.settingsUrl}; removing data frees room too.`,
    );
  }
  known.bytes += adding;
}
