import { eq } from "drizzle-orm";
import type { AppsContext } from "../context.ts";
import { folderUploads } from "../db/schema.ts";
import { plain, receiveManifestFile, receiveTar } from "./folder-upload.ts";
import { normalisePath } from "./paths.ts";

/**
 * The app host's upload route on the bare apps domain:
 * - `PUT /_hatch/uploads/<token>` with a folder upload's token: the folder as a tar (publish { upload: true });
 * - `PUT /_hatch/uploads/<token>/<path>`: one missing file of a manifest publish.
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
  return plain(
    404,
    "This upload URL is unknown, expired or already used. Call publish again (upload: true, or the manifest) to get a fresh one.",
  );
}
