import { lockLimit, metrics, type Database } from "@hatch/platform";
import { formatBytes, type Entitlements } from "@hatch/contracts";
import { sql, type SQL } from "drizzle-orm";
import type { AppsContext } from "../context.ts";
import { rowsOf } from "../db/rows.ts";
import { appsTable, dataUsage, documentUsage, storageEscrow } from "../db/schema.ts";
import { DataError } from "../http/answers.ts";
import { anyShardWithRoom, shardShare, updateFreeShardSql, USAGE_SHARDS } from "./document-usage.ts";

// The plan's storage limit on data writes: documents and files of all the account's apps together, summed from the
// apps' `data_usage` (files) and `document_usage` (documents) rows. A file or a patch that adds bytes counts them in
// its transaction under the account's storage lock (checkLimitLocked's key), so writes at once cannot pass the limit together.
// A document add, the common write, takes its bytes from the account's escrow instead (`storage_escrow`, the way
// document counts are held, document-usage.ts): shards that may each grant their share of half the room the account
// had left, taken in the statement that inserts the document, without the account's lock. Only an add that finds no
// shard with room takes the lock and shares the room out again (storageForAdd). The locked writers count what the
// shards may still grant as used (and take it back when that leaves them too little), so the held bytes and the
// grants together never pass the limit.

/** What the plan allows an account's data, read before the write's transaction (billing may share its connection). */
export interface StorageLimit {
  accountId: string;
  entitlements: Entitlements | null;
}

export async function storageLimitOf(ctx: Pick<AppsContext, "entitlements">, accountId: string): Promise<StorageLimit> {
  return { accountId, entitlements: (await ctx.entitlements?.get(accountId)) ?? null };
}

/** Bytes of documents and files all the account's apps hold now (also billing's storage usage, via rpc `storage`). */
export function storedBytes(db: Pick<Database, "execute">, accountId: string): Promise<number> {
  return sumOf(db, stored(accountId));
}

/** storedBytes as an SQL expression. */
function stored(accountId: string): SQL {
  const ofAccount = sql`select ${appsTable.id} from ${appsTable} where ${appsTable.accountId} = ${accountId}`;
  return sql`coalesce((select sum(${dataUsage.fileBytes}) from ${dataUsage} where ${dataUsage.appId} in (${ofAccount})), 0)
    + coalesce((select sum(${documentUsage.bytes}) from ${documentUsage} where ${documentUsage.appId} in (${ofAccount})), 0)`;
}

/** Whether a write of `adding` bytes is checked against a plan's storage at all (checkStorageLocked does nothing else). */
export function storageLimited(limit: StorageLimit | undefined, adding: number): limit is StorageLimit {
  const max = limit?.entitlements?.limits.storageBytes;
  return max !== null && max !== undefined && adding > 0;
}

/** The plan's storage in bytes when it limits a write of `adding` bytes, else null (see storageLimited). */
export function storageMax(limit: StorageLimit | undefined, adding: number): number | null {
  return storageLimited(limit, adding) ? limit.entitlements!.limits.storageBytes : null;
}

/** The refusal of a write the plan's storage cannot take: for the app's viewer, who is usually not the one who pays. */
function storageFull(entitlements: Entitlements, max: number): DataError {
  return new DataError(
    "needs_payment",
    `This app's storage is full: its owner's ${entitlements.plan} plan allows ${formatBytes(max)} of data and files. The owner can upgrade at ${entitlements.settingsUrl}; removing data frees room too.`,
  );
}

/** What the escrow shards of the account may still grant under the limit `max` (a stale share grants nothing). */
function grantable(accountId: string, max: number): SQL {
  return sql`coalesce((select sum(greatest(${storageEscrow.allowed} - ${storageEscrow.used}, 0))
    from ${storageEscrow} where ${storageEscrow.accountId} = ${accountId} and ${storageEscrow.limitBytes} = ${max}), 0)`;
}

/**
 * In the write's transaction, before anything else is locked: refuses with `needs_payment` a write of `adding`
 * bytes that would take the account past its plan's storage. It counts what the escrow may still grant as used; when
 * that leaves too little room, it takes the escrow's room back (waiting for the adds it granted) and counts exactly.
 */
export async function checkStorageLocked(
  tx: Pick<Database, "execute">,
  limit: StorageLimit | undefined,
  adding: number,
): Promise<void> {
  const max = storageMax(limit, adding);
  if (max === null) return;
  const { accountId, entitlements } = limit!;
  await lockStorage(tx, accountId);
  let used = await sumOf(tx, sql`${stored(accountId)} + ${grantable(accountId, max)}`);
  if (used + adding > max) {
    await tx.execute(
      sql`update ${storageEscrow} set allowed = ${storageEscrow.used} where ${storageEscrow.accountId} = ${accountId}`,
    );
    used = await storedBytes(tx, accountId);
  }
  if (used + adding > max) throw storageFull(entitlements!, max);
}

/** The account's storage lock (checkLimitLocked's): locked writers and escrow shares take turns. */
function lockStorage(tx: Pick<Database, "execute">, accountId: string): Promise<void> {
  return lockLimit(tx, "storageBytes", accountId);
}

async function sumOf(db: Pick<Database, "execute">, value: SQL): Promise<number> {
  const [row] = rowsOf<{ value: string | null }>(await db.execute(sql`select ${value} as value`));
  return Number(row?.value ?? 0);
}

/**
 * The CTE body that takes `bytes` of the account's storage from a free escrow shard shared under the limit `max` with
 * room for them (updateFreeShardSql). No row when none has. A document add counts and inserts only from its row
 * (documents.ts), so it adds only with its bytes granted.
 */
export function grantSql(accountId: SQL, bytes: SQL, max: SQL): SQL {
  return updateFreeShardSql(
    sql`${storageEscrow}`,
    "account_id",
    accountId,
    sql`used = used + ${bytes}`,
    roomFor(max, bytes),
    sql`true`,
  );
}

/** An escrow shard shared under the limit `max` may still grant `bytes`. */
function roomFor(max: SQL | number, bytes: SQL | number): SQL {
  return sql`${storageEscrow.limitBytes} = ${max} and ${storageEscrow.used} + ${bytes} <= ${storageEscrow.allowed}`;
}

/**
 * In a transaction, for a document add of `bytes` that got nothing from the escrow: takes the account's storage
 * lock. `room` when a shard has room for it by then (read without locking it): the add asks the escrow again.
 * Otherwise, or with `force` (the shards with room were all busy again): locks every escrow shard of the account
 * (waiting for the adds they granted), refuses the add when the account cannot take it, and shares the room left
 * after it out again over the shards, under the plan's limit now; `counted` then, and the add goes in without the
 * escrow (its bytes were counted here).
 */
export async function storageForAdd(
  tx: Pick<Database, "execute">,
  limit: StorageLimit,
  bytes: number,
  force = false,
): Promise<"room" | "counted"> {
  const outcome = await storageForAddOnce(tx, limit, bytes, force);
  metrics.storageEscrowLocks.inc(outcome);
  return outcome;
}

async function storageForAddOnce(
  tx: Pick<Database, "execute">,
  limit: StorageLimit,
  bytes: number,
  force: boolean,
): Promise<"room" | "counted"> {
  const { accountId, entitlements } = limit;
  const max = entitlements!.limits.storageBytes!;
  await lockStorage(tx, accountId);
  if (!force && (await anyShardWithRoom(tx, sql`${storageEscrow}`, "account_id", accountId, roomFor(max, bytes))))
    return "room";
  await tx.execute(
    sql`select 1 from ${storageEscrow} where ${storageEscrow.accountId} = ${accountId} order by ${storageEscrow.shard} for update`,
  );
  const held = await storedBytes(tx, accountId);
  if (held + bytes > max) throw storageFull(entitlements!, max);
  // Half the room left goes out, so files and patches (counted under the lock) keep room beside the grants; each share
  // after this one is half of what is left then, as the account fills.
  const left = Math.floor((max - held - bytes) / 2);
  const shares = Array.from({ length: USAGE_SHARDS }, (_, shard) => {
    return sql`(${accountId}, ${shard}, ${shardShare(left, shard)}, 0, ${max})`;
  });
  await tx.execute(sql`insert into ${storageEscrow} (account_id, shard, allowed, used, limit_bytes)
    values ${sql.join(shares, sql`, `)}
    on conflict (account_id, shard) do update set allowed = excluded.allowed, used = 0, limit_bytes = excluded.limit_bytes`);
  return "counted";
}
