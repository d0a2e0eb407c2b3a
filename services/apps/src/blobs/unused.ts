import type { Database } from "@hatch/platform";
import { and, asc, eq, inArray, notExists, sql } from "drizzle-orm";
import type { AppsContext } from "../context.ts";
import { blobs, bucketFiles, versionFiles } from "../db/schema.ts";

// Content nobody uses any more: a blob goes when no version file and no bucket file points at its sha256. Two steps,
// because the store is not transactional: inside the change's transaction the `blobs` row is dropped (the decision),
// and after the commit the bytes are removed from the store, under a per-content lock that an upload of the same
// content also takes, so an upload that brings the content back in between is never left without its bytes.

export type Tx = Parameters<Parameters<Database["transaction"]>[0]>[0];

const CHUNK = 1000;

/**
 * Inside a transaction that has already removed its own references: drops the `blobs` rows of these hashes that no
 * version file or bucket file uses, and returns them (hand them to `removeStoredBlobs` after the commit).
 *
 * The rows are locked first (in hash order, so two callers never wait on each other crosswise) and checked in a
 * later statement: a transaction that was adding a reference while holding the row (an upload, a publish) has
 * committed by then, and the check's fresh snapshot sees its reference.
 */
export async function forgetUnusedBlobs(tx: Tx, shas: readonly string[]): Promise<string[]> {
  const sorted = [...new Set(shas)].sort();
  const gone: string[] = [];
  for (let i = 0; i < sorted.length; i += CHUNK) {
    const chunk = sorted.slice(i, i + CHUNK);
    await tx
      .select({ sha256: blobs.sha256 })
      .from(blobs)
      .where(inArray(blobs.sha256, chunk))
      .orderBy(asc(blobs.sha256))
      .for("update");
    const inVersion = tx
      .select({ one: versionFiles.sha256 })
      .from(versionFiles)
      .where(eq(versionFiles.sha256, blobs.sha256));
    const inBucket = tx
      .select({ one: bucketFiles.sha256 })
      .from(bucketFiles)
      .where(eq(bucketFiles.sha256, blobs.sha256));
    const rows = await tx
      .delete(blobs)
      .where(and(inArray(blobs.sha256, chunk), notExists(inVersion), notExists(inBucket)))
      .returning({ sha256: blobs.sha256 });
    gone.push(...rows.map((r) => r.sha256));
  }
  return gone;
}

/**
 * Registers content in `blobs` (or locks its row when it is there) for the rest of the transaction. True when the row
 * is new: nobody held the content a moment ago, so a removal may have taken its bytes from the store meanwhile.
 * Call it under `lockBlobContent`.
 */
export async function registerBlob(tx: Tx, sha256: string, size: number): Promise<boolean> {
  const [row] = await tx
    .insert(blobs)
    .values({ sha256, size })
    .onConflictDoUpdate({ target: blobs.sha256, set: { size: sql`excluded.size` } })
    // A row this statement inserted has no xmax; one it updated (the conflict) carries this transaction's id.
    .returning({ fresh: sql<boolean>`xmax = 0` });
  return row?.fresh === true;
}

/**
 * Puts content in the store and registers it, under the content's lock, so a removal of the same content running
 * at the same moment cannot delete the bytes under a row that then exists. `more` runs in the same transaction.
 */
export async function storeBlob(
  app: Pick<AppsContext, "db" | "blobs">,
  sha256: string,
  bytes: Uint8Array,
  more?: (tx: Tx) => Promise<void>,
): Promise<void> {
  await app.db.transaction(async (tx) => {
    await lockBlobContent(tx, sha256);
    await app.blobs.put(sha256, bytes);
    await registerBlob(tx, sha256, bytes.byteLength);
    await more?.(tx);
  });
}

/** Serialises everything that puts or removes one content in the store (transaction-scoped, so it ends with it). */
export async function lockBlobContent(tx: Tx, sha256: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`hatch:blob:${sha256}`}))`);
}

/**
 * After the commit: removes from the store the blobs `forgetUnusedBlobs` dropped, each only if no `blobs` row came
 * back meanwhile (an upload of the same content). Also cleans up after a failed upload. Never throws: a blob left
 * behind costs space, not correctness, so failures are logged.
 */
export async function removeStoredBlobs(
  app: Pick<AppsContext, "db" | "blobs" | "logger">,
  shas: readonly string[],
): Promise<number> {
  let removed = 0;
  for (const sha256 of shas) {
    try {
      const done = await app.db.transaction(async (tx) => {
        await lockBlobContent(tx, sha256);
        const [row] = await tx.select({ sha256: blobs.sha256 }).from(blobs).where(eq(blobs.sha256, sha256));
        if (row) return false;
        await app.blobs.delete(sha256);
        return true;
      });
      if (done) removed++;
    } catch (error) {
      app.logger.warn("unused blob not removed from the store", { sha256, error });
    }
  }
  return removed;
}
