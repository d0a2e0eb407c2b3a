import { ConfigError, type Database } from "@hatch/platform";
import { desc } from "drizzle-orm";
import { blobs } from "../db/schema.ts";
import type { BlobStore } from "./types.ts";

/** How many of the newest stored files a copy on disk storage looks for in its folder at start. */
const NEWEST = 5;

/**
 * At start, an apps copy on disk storage checks that its folder is where the published files are: when the database
 * names files and the folder holds none of the newest, they were stored by another copy on its own disk (or the
 * folder was emptied), and this copy could serve none of them. It refuses to start, saying what to set: copies share
 * files through the object store (S3_BUCKET) or one folder they all mount. Files gone since (a few of the newest)
 * are not this check's business: the host answers 503 for them and logs it.
 */
export async function checkDiskStore(db: Database, store: BlobStore, blobDir: string): Promise<void> {
  if (store.kind !== "disk") return;
  const newest = await db.select({ sha256: blobs.sha256 }).from(blobs).orderBy(desc(blobs.createdAt)).limit(NEWEST);
  if (newest.length === 0) return;
  const found = await Promise.all(newest.map((row) => store.has(row.sha256)));
  if (found.some(Boolean)) return;
  throw new ConfigError(
    "Invalid configuration:\n" +
      `  BLOB_DIR: ${blobDir} holds none of the ${newest.length} newest published files, so another apps copy keeps ` +
      "them on its own disk (or this folder was emptied). Several apps copies need the object store: set S3_BUCKET " +
      "(with S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY and S3_ENDPOINT when not AWS) on every copy, or give every copy " +
      "the same BLOB_DIR on a shared volume.",
  );
}
