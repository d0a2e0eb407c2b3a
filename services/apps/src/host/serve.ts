import type { Logger } from "@hatch/shared";
import type { BlobStore } from "../blobs/types.ts";
import { pages } from "./pages.ts";
import { candidatesOf, etagMatches, hasExtension } from "./paths.ts";
import type { Site, SiteFile } from "./site.ts";

export interface Served {
  response: Response;
  /** An HTML document was answered (200 or 304): a page open, for the stats. */
  document: boolean;
}

/**
 * Answers a GET or HEAD for `path` (a stored-path key, see paths.ts) from the version's files: the file itself, the
 * SPA's index.html for unknown extensionless paths when service.json asks, else the app's own 404 page (status
 * 404) or a plain one. ETag is the quoted sha256, so a matching If-None-Match answers 304 without reading the blob.
 */
export async function serveSite(blobs: BlobStore, logger: Logger, request: Request, site: Site, path: string, isPublic: boolean): Promise<Served> {
  let file = findFile(site, path);
  if (!file && site.spa && !hasExtension(path)) file = site.files.get("index.html");
  if (!file) {
    const response = site.notFound ? await notFoundPage(blobs, logger, request, site.notFound, isPublic) : pages.notFound();
    return { response, document: false };
  }
  if (etagMatches(request.headers.get("if-none-match"), file.headers.ETag!)) {
    return { response: new Response(null, { status: 304, headers: file.headers }), document: file.html };
  }
  if (request.method === "HEAD") {
    return { response: new Response(null, { headers: { ...file.headers, "Content-Length": String(file.size) } }), document: false };
  }
  const body = await blobs.get(file.sha256);
  if (!body) return { response: missingBlob(logger, file), document: false };
  return { response: new Response(body, { headers: file.headers }), document: file.html };
}

function findFile(site: Site, path: string): SiteFile | undefined {
  for (const candidate of candidatesOf(path)) {
    const file = site.files.get(candidate);
    if (file) return file;
  }
  return undefined;
}

async function notFoundPage(blobs: BlobStore, logger: Logger, request: Request, file: SiteFile, isPublic: boolean): Promise<Response> {
  const headers = {
    "Content-Type": file.headers["Content-Type"]!,
    "Cache-Control": isPublic ? "no-cache" : "private, no-cache",
    "X-Content-Type-Options": "nosniff",
  };
  if (request.method === "HEAD") return new Response(null, { status: 404, headers: { ...headers, "Content-Length": String(file.size) } });
  const body = await blobs.get(file.sha256);
  if (!body) return missingBlob(logger, file);
  return new Response(body, { status: 404, headers });
}

/** The version's row names a blob the store does not have: a storage fault, not the viewer's. */
function missingBlob(logger: Logger, file: SiteFile): Response {
  logger.error("blob missing from the store", { sha256: file.sha256, path: file.path });
  return pages.failed();
}
