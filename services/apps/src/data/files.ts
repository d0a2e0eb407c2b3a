import { formatBytes, randomId } from "@hatch/contracts";
import { DATA_LIMITS } from "../spec/data-rules.ts";
import { and, desc, eq, sql, type SQL } from "drizzle-orm";
import type { AppsContext } from "../context.ts";
import { blobs, bucketFiles, dataUsage } from "../db/schema.ts";
import { forgetUnusedBlobs, lockBlobContent, registerBlob, removeStoredBlobs, type Tx } from "../blobs/unused.ts";
import type { Viewer } from "../http/viewer.ts";
import { DataError } from "../http/answers.ts";
import { lockAppRow } from "./app-lock.ts";
import { checkStorageLocked, type StorageLimit } from "./storage-limit.ts";

// The files of an app's buckets: rows in `bucket_files`, bytes in the content-addressed blob store (shared with
// published versions, registered in `blobs`), and the app's counters in `data_usage`, changed in one transaction.
//
// Locks are always taken in one order, so no two changes wait on each other crosswise: the account's storage lock (an
// upload under a plan limit), the app row (key share; a delete_tool holds it for update and so runs alone), the
// content's lock, its `blobs` row, then `data_usage`.

type FilesContext = Pick<AppsContext, "db" | "blobs" | "logger">;

export interface StoredFile {
  id: string;
  name: string;
  contentType: string;
  size: number;
  sha256: string;
  /** The uploader's user id (the `creator` rule compares it) and email; null when uploaded anonymously. */
  createdBy: string | null;
  createdByEmail: string | null;
  createdAt: Date;
}

export interface Upload {
  appId: string;
  bucket: string;
  name: string;
  contentType: string;
  bytes: Uint8Array;
  sha256: string;
  viewer: Viewer | null;
  /** The plan's storage, when the upload counts against it (read before the transaction). */
  storage?: StorageLimit;
}

/**
 * Reads a request body of at most `max` bytes, hashing as it goes; null as soon as it is longer (the chunk that
 * goes over is not kept, and the rest is never read). A body that breaks off is `invalid`.
 */
export async function readUpload(
  body: ReadableStream<Uint8Array> | null,
  max: number,
): Promise<{ bytes: Uint8Array; sha256: string } | null> {
  const hasher = new Bun.CryptoHasher("sha256");
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (body) {
    const reader = body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > max) {
          await reader.cancel().catch(() => undefined);
          return null;
        }
        hasher.update(value);
        chunks.push(value);
      }
    } catch {
      throw new DataError("invalid", "The file's bytes did not arrive completely. Try the upload again.");
    }
  }
  return { bytes: Buffer.concat(chunks, size), sha256: hasher.digest("hex") };
}

/** Stores an upload: the bytes (once per content), the file's row and the app's counters. Nothing stays on failure. */
export async function saveFile(app: FilesContext, upload: Upload): Promise<StoredFile> {
  const size = upload.bytes.byteLength;
  // Refused before any byte is written when the app is already full (checked again, exactly, in the transaction).
  const [usage] = await app.db.select().from(dataUsage).where(eq(dataUsage.appId, upload.appId));
  if (usage) checkLimits(usage, size);
  // And when the account's storage is full (checked again, under its lock, in the transaction that counts the file).
  if (upload.storage) await app.db.transaction((tx) => checkStorageLocked(tx, upload.storage, size));
  const [known] = await app.db.select({ sha256: blobs.sha256 }).from(blobs).where(eq(blobs.sha256, upload.sha256));
  if (!known) await app.blobs.put(upload.sha256, upload.bytes);
  try {
    return await app.db.transaction((tx) => recordFile(app, tx, upload));
  } catch (error) {
    // The bytes may be in the store with no row naming them (this transaction's row was rolled back).
    await removeStoredBlobs(app, [upload.sha256]);
    throw error;
  }
}

async function recordFile(app: FilesContext, tx: Tx, upload: Upload): Promise<StoredFile> {
  const size = upload.bytes.byteLength;
  await checkStorageLocked(tx, upload.storage, size);
  await requireApp(tx, upload.appId);
  await lockBlobContent(tx, upload.sha256);
  // A new row means nobody held this content a moment ago: a removal may have taken the bytes since they were put.
  const fresh = await registerBlob(tx, upload.sha256, size);
  if (fresh && !(await app.blobs.has(upload.sha256))) await app.blobs.put(upload.sha256, upload.bytes);
  await tx.insert(dataUsage).values({ appId: upload.appId }).onConflictDoNothing();
  const counted = await tx
    .update(dataUsage)
    .set({ files: sql`${dataUsage.files} + 1`, fileBytes: sql`${dataUsage.fileBytes} + ${size}` })
    .where(
      and(
        eq(dataUsage.appId, upload.appId),
        sql`${dataUsage.files} < ${DATA_LIMITS.maxFilesPerApp}`,
        sql`${dataUsage.fileBytes} + ${size} <= ${DATA_LIMITS.maxFileBytesPerApp}`,
      ),
    )
    .returning({ files: dataUsage.files });
  if (counted.length === 0) {
    const [usage] = await tx.select().from(dataUsage).where(eq(dataUsage.appId, upload.appId));
    checkLimits(usage ?? { files: 0, fileBytes: 0 }, size);
    throw new DataError(
      "limit_exceeded",
      "This app holds as many files as it may. Remove files it no longer needs first.",
    );
  }
  const [row] = await tx
    .insert(bucketFiles)
    .values({
      id: randomId(12),
      appId: upload.appId,
      bucket: upload.bucket,
      name: upload.name,
      contentType: upload.contentType,
      size,
      sha256: upload.sha256,
      createdBy: upload.viewer?.sub ?? null,
      createdByEmail: upload.viewer?.email ?? null,
    })
    .returning();
  return row!;
}

function checkLimits(usage: { files: number; fileBytes: number }, size: number): void {
  if (usage.files >= DATA_LIMITS.maxFilesPerApp) {
    throw new DataError(
      "limit_exceeded",
      `This app already holds ${DATA_LIMITS.maxFilesPerApp} files, the most it may. Remove files it no longer needs first.`,
    );
  }
  if (usage.fileBytes + size > DATA_LIMITS.maxFileBytesPerApp) {
    const left = Math.max(0, DATA_LIMITS.maxFileBytesPerApp - usage.fileBytes);
    throw new DataError(
      "limit_exceeded",
      `This app's files may take ${formatBytes(DATA_LIMITS.maxFileBytesPerApp)} in all and ${formatBytes(left)} are left; this file is ${formatBytes(size)}. Remove files it no longer needs first.`,
    );
  }
}

/** The app row, shared-locked for the transaction: a delete_tool of the app waits (or has won: not_found). */
async function requireApp(tx: Tx, appId: string): Promise<void> {
  if (!(await lockAppRow(tx, appId))) throw new DataError("not_found", "This app no longer exists.");
}

export async function getFile(
  db: FilesContext["db"],
  appId: string,
  bucket: string,
  id: string,
): Promise<StoredFile | null> {
  const [row] = await db
    .select()
    .from(bucketFiles)
    .where(and(eq(bucketFiles.id, id), eq(bucketFiles.appId, appId), eq(bucketFiles.bucket, bucket)));
  return row ?? null;
}

/**
 * Removes a file: its row and counters in one transaction; then its bytes, when nothing else uses them. `check`
 * sees the row (locked) and throws to refuse. False when there is no such file.
 */
export async function removeFile(
  app: FilesContext,
  appId: string,
  bucket: string,
  id: string,
  check: (file: StoredFile) => void,
  /** Writes what else the removal records (the dashboard's activity log event), in the same transaction. */
  record?: (tx: Pick<FilesContext["db"], "insert">) => Promise<void>,
): Promise<boolean> {
  const gone = await app.db.transaction(async (tx) => {
    await requireApp(tx, appId);
    const [file] = await tx
      .select()
      .from(bucketFiles)
      .where(and(eq(bucketFiles.id, id), eq(bucketFiles.appId, appId), eq(bucketFiles.bucket, bucket)))
      .for("update");
    if (!file) return null;
    check(file);
    await tx.select({ sha256: blobs.sha256 }).from(blobs).where(eq(blobs.sha256, file.sha256)).for("update");
    await tx.delete(bucketFiles).where(eq(bucketFiles.id, file.id));
    await tx
      .update(dataUsage)
      .set({
        files: sql`greatest(${dataUsage.files} - 1, 0)`,
        fileBytes: sql`greatest(${dataUsage.fileBytes} - ${file.size}, 0)`,
      })
      .where(eq(dataUsage.appId, appId));
    await record?.(tx);
    return forgetUnusedBlobs(tx, [file.sha256]);
  });
  if (gone === null) return false;
  await removeStoredBlobs(app, gone);
  return true;
}

export interface FilePage {
  files: StoredFile[];
  next: string | null;
}

/** Files of a bucket, newest first, `limit` at a time; `createdBy` keeps one viewer's own (the `creator` rule). */
export async function listFiles(
  db: FilesContext["db"],
  query: { appId: string; bucket: string; createdBy?: string; limit: number; after?: string | null },
): Promise<FilePage> {
  const conditions: SQL[] = [eq(bucketFiles.appId, query.appId), eq(bucketFiles.bucket, query.bucket)];
  if (query.createdBy !== undefined) conditions.push(eq(bucketFiles.createdBy, query.createdBy));
  if (query.after) {
    const cursor = readCursor(query.after, query.bucket);
    conditions.push(sql`(${bucketFiles.createdAt}, ${bucketFiles.id}) < (${cursor.at}::timestamptz, ${cursor.id})`);
  }
  const rows = await db
    .select({
      file: bucketFiles,
      at: sql<string>`to_char(${bucketFiles.createdAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`,
    })
    .from(bucketFiles)
    .where(and(...conditions))
    .orderBy(desc(bucketFiles.createdAt), desc(bucketFiles.id))
    .limit(query.limit + 1);
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  const next =
    rows.length > query.limit && last ? writeCursor({ b: query.bucket, at: last.at, id: last.file.id }) : null;
  return { files: page.map((r) => r.file), next };
}

/** A page's end: the bucket it lists and the last file's exact creation time (microseconds) and id. Opaque to pages. */
interface Cursor {
  b: string;
  at: string;
  id: string;
}

const CURSOR_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const FILE_ID = /^[A-Za-z0-9_-]{1,64}$/;

function writeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString("base64url");
}

function readCursor(text: string, bucket: string): Cursor {
  let cursor: Partial<Cursor> | null = null;
  try {
    cursor = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as Partial<Cursor>;
  } catch {
    cursor = null;
  }
  const valid =
    cursor !== null &&
    typeof cursor === "object" &&
    cursor.b === bucket &&
    typeof cursor.at === "string" &&
    isExactTime(cursor.at) &&
    typeof cursor.id === "string" &&
    FILE_ID.test(cursor.id);
  if (!valid)
    throw new DataError(
      "invalid",
      "This `after` cursor does not belong to this bucket's list. Pass the `next` value of the previous page, or leave `after` out to start over.",
    );
  return cursor as Cursor;
}

/** A real UTC time as the list writes it (a day like Feb 31 would fail in the query, not here). */
function isExactTime(text: string): boolean {
  if (!CURSOR_TIME.test(text)) return false;
  const date = new Date(`${text.slice(0, 23)}Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 19) === text.slice(0, 19);
}

export function isFileId(id: string): boolean {
  return FILE_ID.test(id);
}
