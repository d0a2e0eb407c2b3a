import { consumeConfirm } from "@hatch/platform";
import {
  formatBytes,
  httpStatusOf,
  isToolError,
  randomId,
  ToolError,
  type CallContext,
  type ConfirmClaims,
  plural,
} from "@hatch/contracts";
import { PUBLISH_LIMITS } from "../spec/limits.ts";
import { randomBytes } from "node:crypto";
import { and, eq, isNull, sql } from "drizzle-orm";
import { appUrl } from "../apps-repo.ts";
import { storeBlob } from "../blobs/unused.ts";
import { appsRootOrigin } from "../config.ts";
import type { AppsContext } from "../context.ts";
import { rowsOf } from "../db/rows.ts";
import { blobs, confirmUses, folderUploads, uploads } from "../db/schema.ts";
import { accountOfApp, checkAppLimit } from "./account.ts";
import { commitVersion, textList, type Tx, type VersionTarget } from "./commit.ts";
import { checkFolderContents } from "./check.ts";
import { checkFolder, contentTypeOf, type FolderEntry } from "./folder.ts";
import { gunzipAtMost, isGzip, readTar } from "./tar.ts";

// A folder publish in two steps: publish { upload: true } (or a manifest with missing files) decides everything
// (which app, or a new app's name, visibility and account; the user's answer is spent here) and stores it with a
// one-time token; the bytes arrive on the app host's bare domain at /_hatch/uploads/<token>[/<path>].

/** What a folder upload publishes to; `chosenByUser`: the user picked "public" in the naming form themselves. */
export type UploadTarget = VersionTarget & { chosenByUser?: boolean };

export type FolderUploadRow = typeof folderUploads.$inferSelect;

/** A tar may carry this much beyond the folder's own limit: headers and padding (up to ~2 KB a file). */
export const TAR_OVERHEAD_BYTES = 64 * 1024 * 1024;
/** The most a tar upload may be (and, gzip, unpack to). */
export const TAR_MAX_BYTES = PUBLISH_LIMITS.maxTotalBytes + TAR_OVERHEAD_BYTES;
const PUT_CONCURRENCY = 16;

export interface FolderUploadTicket {
  id: string;
  /** The tar's URL, or the base the manifest's missing paths are appended to (ends with /). */
  url: string;
  expiresAt: Date;
}

/**
 * Stores a folder upload and, for a manifest, one row per missing content (named by its first path). The user's
 * answer that decided the target is spent in the same transaction: one answer, one upload URL.
 */
export async function createFolderUpload(
  app: AppsContext,
  ctx: CallContext,
  kind: "tar" | "manifest",
  target: UploadTarget,
  options: { manifest?: readonly FolderEntry[]; missing?: readonly FolderEntry[]; confirmation?: ConfirmClaims } = {},
): Promise<FolderUploadTicket> {
  const id = `upl_${randomId(16)}`;
  const token = randomBytes(30).toString("base64url");
  const expiresAt = new Date(Date.now() + PUBLISH_LIMITS.uploadUrlTtlSeconds * 1000);
  const manifest = options.manifest?.map(({ path, sha256, size }) => ({ path, sha256, size })) ?? null;
  await app.db.transaction(async (tx) => {
    if (options.confirmation) await consumeConfirm(tx, confirmUses, options.confirmation);
    await tx.insert(folderUploads).values({ id, token, userId: ctx.sub, kind, ctx, target, manifest, expiresAt });
    const missing = options.missing ?? [];
    for (let i = 0; i < missing.length; i += 5000) {
      const rows = missing.slice(i, i + 5000);
      await tx.execute(sql`
        insert into ${uploads} (token, sha256, size, user_id, expires_at, batch, path)
        select u.token, u.sha256, u.size::bigint, ${ctx.sub}, ${expiresAt.toISOString()}::timestamptz, ${id}, u.path
        from unnest(${textList(rows.map(() => randomBytes(24).toString("base64url")))}, ${textList(rows.map((m) => m.sha256))}, ${textList(rows.map((m) => String(m.size)))}, ${textList(rows.map((m) => m.path))})
          as u(token, sha256, size, path)`);
    }
  });
  const url = `${appsRootOrigin(app.config)}/_hatch/uploads/${token}${kind === "manifest" ? "/" : ""}`;
  return { id, url, expiresAt };
}

/** The base URL of a stored manifest upload (the same one its first answer gave). */
export function manifestUploadUrl(app: AppsContext, row: Pick<FolderUploadRow, "token">): string {
  return `${appsRootOrigin(app.config)}/_hatch/uploads/${row.token}/`;
}

/** Marks the folder upload used inside the publish's transaction; a second use (even a concurrent one) is refused. */
export async function spendFolderUpload(tx: Tx, id: string): Promise<void> {
  const rows = await tx
    .update(folderUploads)
    .set({ usedAt: new Date() })
    .where(and(eq(folderUploads.id, id), isNull(folderUploads.usedAt)))
    .returning({ id: folderUploads.id });
  if (rows.length === 0)
    throw new ToolError("conflict", "This upload was already used to publish. Call publish again for a new one.");
}

/** The manifest entries of a stored manifest upload. */
export function manifestEntries(row: FolderUploadRow): FolderEntry[] {
  return ((row.manifest ?? []) as { path: string; sha256: string; size: number }[]).map((m) => ({
    ...m,
    contentType: contentTypeOf(m.path),
  }));
}

/**
 * `PUT /_hatch/uploads/<token>`: a folder as a tar (plain or gzip) for a `tar` upload. Runs today's checks, stores
 * the contents the store lacks, publishes, and answers one line a person reads in a terminal.
 */
export async function receiveTar(app: AppsContext, request: Request, row: FolderUploadRow): Promise<Response> {
  if (request.method !== "PUT")
    return plain(
      405,
      "Upload with HTTP PUT and the folder as a tar as the body: tar -C dist -cf - . | curl -sS --fail-with-body -T - <this url>",
      { Allow: "PUT" },
    );
  const refused = usable(row);
  if (refused) return refused;
  try {
    const declared = Number(request.headers.get("content-length") ?? Number.NaN);
    if (Number.isFinite(declared) && declared > TAR_MAX_BYTES) return tooLarge(declared);
    const raw = await readAtMost(request, TAR_MAX_BYTES);
    if (!raw) return tooLarge(null);
    const data = isGzip(raw) ? gunzipAtMost(raw, TAR_MAX_BYTES) : raw;
    if (!data) return tooLarge(null);
    const files = readTar(data);
    if (files.length > PUBLISH_LIMITS.maxFiles)
      checkFolder(files.map((f) => ({ path: f.path, size: f.bytes.byteLength })));

    const bytes = new Map<string, Uint8Array>();
    const entries: FolderEntry[] = files.map((file) => {
      const sha256 = Bun.CryptoHasher.hash("sha256", file.bytes, "hex");
      bytes.set(sha256, file.bytes);
      return { path: file.path, sha256, size: file.bytes.byteLength, contentType: contentTypeOf(file.path) };
    });
    refuseNestedIndex(entries);
    const config = await checkFolderContents(entries, (sha256) => bytes.get(sha256)!);
    const ctx = row.ctx as CallContext;
    const target = row.target as UploadTarget;
    if (target.kind === "new") await checkAppLimit(app, target.account);
    let fresh = 0;
    const done = await commitVersion(app, ctx, target, entries, config, undefined, async (tx) => {
      await spendFolderUpload(tx, row.id);
      fresh = await storeNewBlobs(app, tx, bytes);
    });
    await flushEvents(app);
    app.logger.info("published", {
      address: done.app.address,
      version: done.version,
      files: entries.length,
      created: done.created,
      upload: "tar",
      stored: fresh,
    });
    const total = entries.reduce((sum, e) => sum + e.size, 0);
    const account = accountOfApp(ctx, done.app.accountId).name;
    const what = done.created
      ? `Created the app "${done.app.name}" at ${done.app.address}, version ${done.version}`
      : `Published ${done.app.address} version ${done.version}`;
    return plain(
      201,
      `${what}: ${appUrl(app.config, done.app.address)} (${done.app.visibility}, account ${account}; ${plural(entries.length, "file")}, ${formatBytes(total)}, ${fresh} new to Hatch)`,
    );
  } catch (error) {
    return failed(
      app,
      error,
      "Run the same command again once it is fixed; the URL stays valid until it is used or expires.",
    );
  }
}

/**
 * `PUT /_hatch/uploads/<token>/<path>`: one missing file of a manifest publish, its raw bytes. They must match the
 * manifest's size and sha256. A file already received answers 200 again; a failed attempt can be repeated.
 */
export async function receiveManifestFile(
  app: AppsContext,
  request: Request,
  token: string,
  path: string,
): Promise<Response> {
  if (request.method !== "PUT")
    return plain(405, "Upload with HTTP PUT and the file's raw bytes as the body.", { Allow: "PUT" });
  const [found] = await app.db
    .select({
      file: uploads,
      batch: { kind: folderUploads.kind, usedAt: folderUploads.usedAt, expiresAt: folderUploads.expiresAt },
    })
    .from(folderUploads)
    .leftJoin(uploads, and(eq(uploads.batch, folderUploads.id), eq(uploads.path, path)))
    .where(eq(folderUploads.token, token));
  if (!found || found.batch.kind !== "manifest")
    return plain(404, "This upload URL is unknown. Call publish with the manifest again to get a fresh one.");
  const refused = usable(found.batch);
  if (refused) return refused;
  const file = found.file;
  if (!file)
    return plain(
      404,
      `"${path}" is not one of the files this publish is missing. Upload only the paths its answer listed, each to the base URL followed by its path.`,
    );
  if (file.usedAt) return plain(200, "Already stored.");
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (Number.isFinite(declared) && declared > file.size)
    return plain(
      413,
      `The manifest says "${path}" is ${file.size} bytes, but ${declared} bytes were sent. Send the file's exact raw bytes.`,
    );
  const bytes = await readAtMost(request, file.size);
  if (!bytes || bytes.byteLength !== file.size) {
    return plain(
      400,
      `The manifest says "${path}" is ${file.size} bytes, but another size was sent. Send the file's exact raw bytes.`,
    );
  }
  const sha256 = new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
  if (sha256 !== file.sha256)
    return plain(
      400,
      `The bytes sent for "${path}" hash to ${sha256}, not to the manifest's ${file.sha256}. Send the file's raw bytes (no encoding) or fix the manifest.`,
    );
  await storeBlob(app, sha256, bytes, async (tx) => {
    await tx.update(uploads).set({ usedAt: new Date() }).where(eq(uploads.token, file.token));
  });
  return plain(201, "Stored.");
}

/** Longest the answer waits for the outbox (as a tool call's does); whatever is left goes out on the relay's poll. */
const FLUSH_WAIT_MS = 2_000;

/** The publish's event out before the answer, as after a tool call: app hosts drop their cached copy on it. */
async function flushEvents(app: AppsContext): Promise<void> {
  if (!app.outbox) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    app.outbox.flush(),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, FLUSH_WAIT_MS))),
  ]);
  clearTimeout(timer);
}

/** Expired or used: 410 with what to do. */
function usable(row: Pick<FolderUploadRow, "usedAt" | "expiresAt" | "kind">): Response | null {
  const again =
    row.kind === "tar"
      ? "Call publish with upload: true for a new URL."
      : "Call publish with the manifest again for new URLs.";
  if (row.usedAt) return plain(410, `This upload URL was already used to publish. ${again}`);
  if (row.expiresAt.getTime() <= Date.now())
    return plain(410, `This upload URL expired at ${row.expiresAt.toISOString()}. ${again}`);
  return null;
}

/** A tar made of the folder instead of its content (tar -cf - dist) has dist/index.html: say how to make it right. */
function refuseNestedIndex(entries: readonly FolderEntry[]): void {
  if (entries.some((e) => e.path === "index.html")) return;
  const nested = entries.filter((e) => e.path.endsWith("/index.html")).sort((a, b) => a.path.length - b.path.length)[0];
  if (!nested) return;
  const folder = nested.path.slice(0, -"/index.html".length);
  throw new ToolError(
    "invalid_input",
    `The archive has ${nested.path} but no index.html at its root. Archive the folder's content: tar -C ${folder} -cf - . | curl -sS --fail-with-body -T - <url>`,
  );
}

/**
 * Registers every content of the tar in `blobs` and writes the bytes of those that were not there, under each
 * content's lock (as storeBlob does), inside the publish's transaction: no file is stored twice.
 */
async function storeNewBlobs(app: AppsContext, tx: Tx, bytes: ReadonlyMap<string, Uint8Array>): Promise<number> {
  const shas = [...bytes.keys()].sort();
  const fresh: string[] = [];
  for (let i = 0; i < shas.length; i += 5000) {
    const chunk = shas.slice(i, i + 5000);
    const rows = await tx.execute(sql`
      insert into ${blobs} (sha256, size)
      select b.sha256, b.size::bigint from unnest(${textList(chunk)}, ${textList(chunk.map((sha256) => String(bytes.get(sha256)!.byteLength)))}) as b(sha256, size)
      on conflict (sha256) do update set size = excluded.size
      returning sha256, (xmax = 0) as fresh`);
    for (const row of rowsOf<{ sha256: string; fresh: boolean }>(rows)) if (row.fresh) fresh.push(row.sha256);
  }
  fresh.sort();
  // The per-content locks of lockBlobContent (blobs/unused.ts), in hash order, in one statement per chunk.
  for (let i = 0; i < fresh.length; i += 5000) {
    const keys = fresh.slice(i, i + 5000).map((sha256) => `hatch:blob:${sha256}`);
    await tx.execute(
      sql`select count(pg_advisory_xact_lock(hashtext(k))) from unnest(${textList(keys)}) with ordinality as v(k, n)`,
    );
  }
  for (let i = 0; i < fresh.length; i += PUT_CONCURRENCY) {
    await Promise.all(fresh.slice(i, i + PUT_CONCURRENCY).map((sha256) => app.blobs.put(sha256, bytes.get(sha256)!)));
  }
  return fresh.length;
}

/** Reads the body, giving up as soon as it is longer than `limit` (null then). */
export async function readAtMost(request: Request, limit: number): Promise<Uint8Array | null> {
  if (!request.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
    length += chunk.byteLength;
    if (length > limit) return null;
    chunks.push(chunk);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

function tooLarge(declared: number | null): Response {
  const size = declared === null ? `over ${formatBytes(TAR_MAX_BYTES)}` : formatBytes(declared);
  return plain(
    413,
    `The upload is ${size}; a version may hold at most ${formatBytes(PUBLISH_LIMITS.maxTotalBytes)} (${formatBytes(PUBLISH_LIMITS.maxFileBytes)} a file). ` +
      "Publish only the built output (e.g. dist/), not node_modules or sources. Nothing was published.",
  );
}

function failed(app: AppsContext, error: unknown, next: string): Response {
  if (isToolError(error)) {
    const retry = error.code === "invalid_input" || error.code === "limit_exceeded" ? ` ${next}` : "";
    return plain(httpStatusOf(error.code), `${error.message}${retry}`);
  }
  const requestId = randomId(10);
  app.logger.error("folder upload failed", { requestId, error });
  return plain(
    500,
    `Hatch could not publish this upload (internal error, request ${requestId}). Nothing was published; run the command again.`,
  );
}

export function plain(status: number, message: string, headers: Record<string, string> = {}): Response {
  return new Response(`${message}\n`, { status, headers: { "Content-Type": "text/plain; charset=utf-8", ...headers } });
}
