import { sql, type SQL } from "drizzle-orm";
import { DATA_LIMITS } from "../spec/data-rules.ts";
import { metrics, type Database } from "@hatch/platform";
import { rowsOf } from "../db/rows.ts";
import { documentUsage } from "../db/schema.ts";
import { lockAppRow } from "./app-lock.ts";

// An app's documents counted in shards (`document_usage`, services/apps/SCHEMA.md), so adds of one app at once do not
// queue on one counter row: an add counts in its database connection's shard, or the next one no other add holds, and
// the app's usage is the sum of its shards. The per-app limit is held by escrow: each shard may count adds up to its
// `allowed`, and an app's `allowed` add up to at most DATA_LIMITS.maxDocumentsPerApp. An add checks and counts one
// shard in the statement that inserts the document; only an add that finds no free shard with room takes the per-app
// lock (shareRoom). Most of those find room once they hold it (another add shared it out meanwhile, holding every
// shard while it did) and add again without locking any shard; only an add that finds no room at all shares the
// app's room out again, which is rare: once per app at its first add, then when its shards have used their shares,
// and near the limit. (An add that locked every shard merely to look made the adds meanwhile find none free, so they
// locked every shard in turn: at 32 connections nearly every add took the lock, bench/README.md round 6.)

/** Shards per app: above the connections one database pool opens (DB_POOL_SIZE, 10 by default). */
export const USAGE_SHARDS = 16;

/** The part of `total` the shard `order`-th in line gets: an equal share, the remainder one each to the first. */
export function shardShare(total: number, order: number): number {
  return Math.floor(total / USAGE_SHARDS) + (order < total % USAGE_SHARDS ? 1 : 0);
}

/** The shard of this connection: the same for every statement a connection runs, so a transaction sees one. */
export const SHARD_OF_CONNECTION = sql.raw(`(pg_backend_pid() % ${USAGE_SHARDS})::smallint`);

/**
 * An update of one of `key`'s shard rows in `table` (keyed by `keyColumn` and `shard`) among those where `room`
 * holds: this connection's shard, else the next one no other transaction holds (SKIP LOCKED: a writer never waits
 * for another's shard while one is free, however many connections share shard numbers). `room` is checked again on
 * the row's newest version once locked. Returns the key column; no row when no free shard has room (or `key` is null).
 */
export function updateFreeShardSql(table: SQL, keyColumn: string, key: SQL, set: SQL, room: SQL, onlyIf: SQL): SQL {
  const column = sql.raw(keyColumn);
  const shards = sql.raw(String(USAGE_SHARDS));
  return sql`update ${table} set ${set}
    where ${onlyIf} and (${column}, shard) = (select ${column}, shard from ${table}
      where ${column} = ${key} and ${room}
      order by (shard - ${SHARD_OF_CONNECTION} + ${shards}) % ${shards}
      limit 1 for update skip locked)
    returning ${column}`;
}

/**
 * Whether one of `key`'s shard rows in `table` has room (`room`), read on what others committed, locking nothing: the
 * look under a lock that tells an add to try its statement again rather than share the room out.
 */
export async function anyShardWithRoom(
  tx: Pick<Database, "execute">,
  table: SQL,
  keyColumn: string,
  key: string,
  room: SQL,
): Promise<boolean> {
  const rows = rowsOf(
    await tx.execute(sql`select 1 from ${table} where ${sql.raw(keyColumn)} = ${key} and ${room} limit 1`),
  );
  return rows.length > 0;
}

/**
 * The CTE body that counts one added document of `bytes` in a free shard with room (updateFreeShardSql). No row when
 * none has, or the app is gone (`appId` is a subquery that locked it, or null). The insert selects from it.
 * `onlyIf`: counted only when it holds (the plan's storage granted, storage-limit.ts's grantSql).
 */
export function countAddSql(appId: SQL, bytes: SQL, onlyIf: SQL = sql`true`): SQL {
  return updateFreeShardSql(
    sql`${documentUsage}`,
    "app_id",
    appId,
    sql`documents = documents + 1, bytes = bytes + ${bytes}`,
    sql`documents < allowed`,
    onlyIf,
  );
}

/**
 * Counts a change of documents and bytes (a removal, a patch that changes the size) in this connection's shard. A
 * shard may go below zero (it counted off a document another shard counted in): only the sums mean anything, and
 * `allowed` is untouched, so the limit still holds. In the change's transaction, after the app row's lock.
 */
export async function countChange(
  tx: Pick<Database, "execute">,
  appId: string,
  change: { documents: number; bytes: number },
): Promise<void> {
  await tx.execute(sql`insert into ${documentUsage} (app_id, shard, documents, bytes)
    values (${appId}, ${SHARD_OF_CONNECTION}, ${change.documents}, ${change.bytes})
    on conflict (app_id, shard) do update set documents = document_usage.documents + excluded.documents,
      bytes = document_usage.bytes + excluded.bytes`);
}

/**
 * In a transaction, when no free shard had room for an add: takes the app's row (key share, as every data write
 * first does) and the app's usage lock. `room` when a shard has room now (on what others committed; nothing more is
 * locked): the add tries its statement again. Otherwise, or with `force` (the add found every shard with room busy
 * again): locks all the app's shards (waiting for the adds they are counting) and gives each shard its share of the
 * room left, this connection's shard first; `shared` then, and the add's statement fits (it skips only rows other
 * transactions hold, and this one holds them all). `full` when the app holds the most documents it may; `gone` when
 * the app was deleted meanwhile.
 */
export async function shareRoom(
  tx: Pick<Database, "execute" | "select">,
  appId: string,
  options: { force?: boolean } = {},
): Promise<"room" | "shared" | "full" | "gone"> {
  const outcome = await shareRoomOnce(tx, appId, options.force === true);
  metrics.documentUsageShares.inc(outcome);
  return outcome;
}

async function shareRoomOnce(
  tx: Pick<Database, "execute" | "select">,
  appId: string,
  force: boolean,
): Promise<"room" | "shared" | "full" | "gone"> {
  if (!(await lockAppRow(tx, appId))) return "gone";
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext('hatch:document_usage'), hashtext(${appId}))`);
  if (!force && (await anyShardWithRoom(tx, sql`${documentUsage}`, "app_id", appId, sql`documents < allowed`)))
    return "room";
  const rows = rowsOf<{ shard: number; documents: number; allowed: number; mine: number }>(
    await tx.execute(sql`select shard, documents, allowed, ${SHARD_OF_CONNECTION} as mine
      from ${documentUsage} where app_id = ${appId} order by shard for update`),
  );
  const mine = Number(rows[0]?.mine ?? (await connectionShard(tx)));
  // A shard has room (it freed while this add waited for the lock): this transaction holds them all now.
  if (rows.some((row) => Number(row.documents) < Number(row.allowed))) return "shared";
  const counted = new Map(rows.map((row) => [Number(row.shard), Number(row.documents)]));
  const held = [...counted.values()].reduce((sum, documents) => sum + documents, 0);
  const room = DATA_LIMITS.maxDocumentsPerApp - held;
  if (room <= 0) return "full";
  const shares = Array.from({ length: USAGE_SHARDS }, (_, shard) => {
    // The remainder goes to the shards from this connection's on, so this add always gets room.
    const share = shardShare(room, (shard - mine + USAGE_SHARDS) % USAGE_SHARDS);
    return sql`(${appId}, ${shard}, ${(counted.get(shard) ?? 0) + share})`;
  });
  await tx.execute(sql`insert into ${documentUsage} (app_id, shard, allowed) values ${sql.join(shares, sql`, `)}
    on conflict (app_id, shard) do update set allowed = excluded.allowed`);
  return "shared";
}

async function connectionShard(tx: Pick<Database, "execute">): Promise<number> {
  const [row] = rowsOf<{ shard: number }>(await tx.execute(sql`select ${SHARD_OF_CONNECTION} as shard`));
  return Number(row!.shard);
}

/** The app's documents now (the sum of its shards). */
export async function documentsHeld(db: Pick<Database, "execute">, appId: string): Promise<number> {
  const [row] = rowsOf<{ documents: string | null }>(
    await db.execute(sql`select sum(documents) as documents from ${documentUsage} where app_id = ${appId}`),
  );
  return Number(row?.documents ?? 0);
}
