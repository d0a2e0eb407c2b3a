import { sql } from "drizzle-orm";
import type { Database } from "../db.ts";
import { checkLimit } from "./entitlements.ts";
import type { Entitlements, LimitName } from "@hatch/contracts";

// A plan limit and the change it guards as one step. Two changes made at once that each fit alone would both pass a
// count taken before either is written; here the count is taken inside the change's transaction, under a lock per
// account and limit that the transaction holds until it ends, so the second waits, counts again and sees the first.
// An advisory lock (no row to lock: the first app, domain or file of an account has none) works alike on Postgres and
// on the embedded PGlite. Keys: hashtext of the limit's name and of the account id; services share one database,
// and each limit is counted by one service only.

export interface LockedLimit {
  /** What billing allows, read BEFORE the transaction (billing may share the embedded database connection it holds). */
  entitlements: Entitlements | null;
  limit: LimitName;
  accountId: string;
  /** What the account uses now, counted in the same transaction (after the lock is taken). */
  used: () => Promise<number>;
  /** What the change adds (1 by default); nothing added (0 or less) is never refused. */
  adding?: number;
  /** The refusal to throw instead of checkLimit's tool error (e.g. a data request's own error); nothing was changed. */
  refuse?: (used: number, max: number) => Error;
}

/**
 * Inside the change's transaction, before the change: takes the account's lock for the limit, counts, and throws
 * (needs_payment, or `refuse`) when the change would pass the limit. Without a limit (null, or billing cannot say)
 * it neither locks nor counts.
 */
export async function checkLimitLocked(tx: Pick<Database, "execute">, check: LockedLimit): Promise<void> {
  const { entitlements, limit, accountId, adding = 1 } = check;
  const max = entitlements?.limits[limit];
  if (!entitlements || max === null || max === undefined || adding <= 0) return;
  await lockLimit(tx, limit, accountId);
  const used = await check.used();
  if (check.refuse && used + adding > max) throw check.refuse(used, max);
  checkLimit(entitlements, limit, used, adding);
}

/**
 * The account's lock for one limit, held until the transaction ends: what checkLimitLocked takes, for a service that
 * counts a limit its own way (apps' storage escrow) and must take turns with the writers checked here.
 */
export async function lockLimit(tx: Pick<Database, "execute">, limit: LimitName, accountId: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`hatch:limit:${limit}`}), hashtext(${accountId}))`);
}
