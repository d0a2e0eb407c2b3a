import { and, eq, gt, isNull } from "drizzle-orm";
import type { AppsContext } from "../context.ts";
import { folderUploads, uploads } from "../db/schema.ts";
import { storeBlob } from "../blobs/unused.ts";
import { plain, readAtMost, receiveManifestFile, receiveTar } from "./folder-upload.ts";
import { normalisePath } from "./paths.ts";

/**
 * The app host's upload route on the bare apps domain:
 * - `PUT /_hatch/uploads/<token>` with a folder upload's token: the folder as a tar (publish { upload: true });
 * - `PUT /_hatch/uploads/<token>/<path>`: one missing file of a manifest publish;
 * - `PUT /_hatch/uploads/<token>` with a per-file token (URLs handed out before manifest uploads had a base URL).
 */
export async function receiveUpload(
  app: AppsContext,
  request: Request,
  token: string,
  rawPath?: string,
): Promise<Response> {
  if (rawPath !== undefined) {
    let path: string;
    try {
      path = normalisePath(rawPath.split("/").map(decodeURIComponent).join("/"));
    } catch {
      return plain(
        400,
        "The path in this upload URL is not valid URL encoding. Append the manifest path, each part URL-encoded.",
      );
    }
    return receiveManifestFile(app, request, token, path);
  }
  const [folder] = await app.db.select().from(folderUploads).where(eq(folderUploads.token, token));
  if (folder?.kind === "tar") return receiveTar(app, request, folder);
  if (folder)
    return plain(
      400,
      "This is the base URL of a manifest publish: PUT each missing file to it followed by the file's path, e.g. <base>/index.html.",
    );
  return receiveFileUpload(app, request, token);
}

/** A per-file token: the raw bytes of one file, matching its manifest size and sha256; works once. */
async function receiveFileUpload(app: AppsContext, request: Request, token: string): Promise<Response> {
  if (request.method !== "PUT")
    return plain(405, "Upload with HTTP PUT and the file's raw bytes as the body.", { Allow: "PUT" });
  const [ticket] = await app.db
    .select()
    .from(uploads)
    .where(and(eq(uploads.token, token), isNull(uploads.usedAt), gt(uploads.expiresAt, new Date())));
  if (!ticket)
    return plain(
      404,
      "This upload URL is unknown, expired or already used. Call publish again (upload: true, or the manifest) to get a fresh one.",
    );
  const bytes = await readAtMost(request, ticket.size);
  if (!bytes || bytes.byteLength !== ticket.size) {
    return plain(
      400,
      `The manifest says this file is ${ticket.size} bytes, but another size was sent. Send the file's exact raw bytes.`,
    );
  }
  const sha256 = new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
  if (sha256 !== ticket.sha256) {
    return plain(
      400,
      `The bytes sent hash to ${sha256}, not to the manifest's ${ticket.sha256}. Send the file's raw bytes (no encoding) or fix the manifest.`,
    );
  }
  await storeBlob(app, sha256, bytes, async (tx) => {
    await tx.update(uploads).set({ usedAt: new Date() }).where(eq(uploads.token, token));
  });
  return plain(201, "Stored.");
}
