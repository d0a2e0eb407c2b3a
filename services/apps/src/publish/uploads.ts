import { PUBLISH_LIMITS, type CallContext } from "@hatch/shared";
import { randomBytes } from "node:crypto";
import { and, eq, gt, isNull } from "drizzle-orm";
import { appsRootOrigin } from "../config.ts";
import type { AppsContext } from "../context.ts";
import { blobs, uploads } from "../db/schema.ts";
import type { FolderEntry } from "./folder.ts";
import { storeBlob } from "../blobs/unused.ts";


export interface UploadTicket {
  path: string;
  sha256: string;
  url: string;
  method: "PUT";
  expiresAt: string;
}

/** One-time upload URLs for blobs the store lacks (one per distinct content, named by its first path). */
export async function issueUploads(app: AppsContext, ctx: CallContext, missing: readonly FolderEntry[]): Promise<UploadTicket[]> {
  const expiresAt = new Date(Date.now() + PUBLISH_LIMITS.uploadUrlTtlSeconds * 1000);
  const rows = missing.map((entry) => ({ token: randomBytes(24).toString("base64url"), sha256: entry.sha256, size: entry.size, userId: ctx.sub, expiresAt }));
  if (rows.length > 0) await app.db.insert(uploads).values(rows);
  const root = appsRootOrigin(app.config);
  return rows.map((row, i) => ({
    path: missing[i]!.path,
    sha256: row.sha256,
    url: `${root}/_hatch/uploads/${row.token}`,
    method: "PUT",
    expiresAt: expiresAt.toISOString(),
  }));
}

/**
 * `PUT /_hatch/uploads/<token>` on the bare apps domain: the raw bytes of one file. The bytes must match the
 * manifest's size and sha256; a token works once (a failed attempt leaves it usable until it expires).
 */
export async function receiveUpload(app: AppsContext, request: Request, token: string): Promise<Response> {
  if (request.method !== "PUT") return text(405, "Upload with HTTP PUT and the file's raw bytes as the body.", { Allow: "PUT" });
  const [ticket] = await app.db
    .select()
    .from(uploads)
    .where(and(eq(uploads.token, token), isNull(uploads.usedAt), gt(uploads.expiresAt, new Date())));
  if (!ticket) return text(404, "This upload URL is unknown, expired or already used. Call publish again with the manifest to get fresh URLs.");
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (Number.isFinite(declared) && declared !== ticket.size) {
    return text(400, `The manifest says this file is ${ticket.size} bytes, but ${declared} bytes were sent. Send the file's exact raw bytes.`);
  }
  const bytes = await readAtMost(request, ticket.size);
  if (!bytes || bytes.byteLength !== ticket.size) {
    return text(400, `The manifest says this file is ${ticket.size} bytes, but another size was sent. Send the file's exact raw bytes.`);
  }
  const sha256 = new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
  if (sha256 !== ticket.sha256) {
    return text(400, `The bytes sent hash to ${sha256}, not to the manifest's ${ticket.sha256}. Send the file's raw bytes (no encoding) or fix the manifest.`);
  }
  await storeBlob(app, sha256, bytes, async (tx) => {
    await tx.update(uploads).set({ usedAt: new Date() }).where(eq(uploads.token, token));
  });
  return text(201, "Stored.");
}

/** Reads the body, giving up as soon as it is longer than `limit` (null then). */
async function readAtMost(request: Request, limit: number): Promise<Uint8Array | null> {
  if (!request.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
    length += chunk.byteLength;
    if (length > limit) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function text(status: number, message: string, headers: Record<string, string> = {}): Response {
  return new Response(`${message}\n`, { status, headers: { "Content-Type": "text/plain; charset=utf-8", ...headers } });
}

