import type { Logger } from "@hatch/platform";
import type { BlobCache } from "./blob-cache.ts";
import { pages } from "./pages.ts";
import { candidatesOf, etagMatches, hasExtension } from "../http/paths.ts";
import type { Site, SiteFile } from "../http/site.ts";

export interface Served {
  response: Response;
  /** An HTML document was answered (200 or 304): a page open, for the stats. */
  document: boolean;
}

/**
 * Answers a GET or HEAD for `path` (a stored-path key, see paths.ts) from the version's files: the file itself, the
 * SPA's index.html for unknown extensionless paths when service.json asks, else the app's own 404 page (status
 * 404) or a plain one. ETag is the quoted sha256, so a matching If-None-Match answers 304 without reading the blob.
 * Synchronous when the bytes are cached (the hot path allocates no promise).
 */
export function serveSite(
  blobs: BlobCache,
  logger: Logger,
  request: Request,
  site: Site,
  path: string,
  isPublic: boolean,
): Served | Promise<Served> {
  let file = findFile(site, path);
  if (!file && site.spa && !hasExtension(path)) file = site.files.get("index.html");
  if (!file) {
    if (!site.notFound) return { response: pages.notFound(), document: false };
    return notFoundPage(blobs, logger, request, site.notFound, isPublic).then((response) => ({
      response,
      document: false,
    }));
  }
  if (etagMatches(request.headers.get("if-none-match"), file.headers.ETag!)) {
    return { response: new Response(null, { status: 304, headers: file.responseHeaders }), document: file.html };
  }
  if (request.method === "HEAD") {
    return {
      response: new Response(null, { headers: { ...file.headers, "Content-Length": String(file.size) } }),
      document: false,
    };
  }
  const found = file;
  const body = blobs.get(found.sha256, found.size);
  if (body instanceof Uint8Array)
    return { response: new Response(body, { headers: found.responseHeaders }), document: found.html };
  return body.then(
    (bytes) =>
      bytes
        ? { response: new Response(bytes, { headers: found.responseHeaders }), document: found.html }
        : { response: missingBlob(blobs, logger, found), document: false },
    (error: unknown) => ({ response: storeFailed(logger, found, error), document: false }),
  );
}

function findFile(site: Site, path: string): SiteFile | undefined {
  for (const candidate of candidatesOf(path)) {
    const file = site.files.get(candidate);
    if (file) return file;
  }
  return undefined;
}

async function notFoundPage(
  blobs: BlobCache,
  logger: Logger,
  request: Request,
  file: SiteFile,
  isPublic: boolean,
): Promise<Response> {
  const headers = {
    "Content-Type": file.headers["Content-Type"]!,
    "Cache-Control": isPublic ? "no-cache" : "private, no-cache",
    "X-Content-Type-Options": "nosniff",
  };
  if (request.method === "HEAD")
    return new Response(null, { status: 404, headers: { ...headers, "Content-Length": String(file.size) } });
  let body: Awaited<ReturnType<BlobCache["get"]>>;
  try {
    body = await blobs.get(file.sha256, file.size);
  } catch (error) {
    return storeFailed(logger, file, error);
  }
  if (!body) return missingBlob(blobs, logger, file);
  return new Response(body, { status: 404, headers });
}

/**
 * The version's row names a blob the store does not have: a storage fault, not the viewer's, and not this request's
 * (503, try again). On disk storage the usual cause is another apps copy that published it onto its own disk.
 */
function missingBlob(blobs: BlobCache, logger: Logger, file: SiteFile): Response {
  logger.error("blob missing from the store", {
    sha256: file.sha256,
    path: file.path,
    store: blobs.storeKind,
    ...(blobs.storeKind === "disk"
      ? { hint: "several apps copies need the object store (S3_BUCKET), or one BLOB_DIR that every copy mounts" }
      : {}),
  });
  return pages.filesUnavailable();
}

/** The store did not answer (S3 down, a disk error): 503, never the viewer's fault. */
function storeFailed(logger: Logger, file: SiteFile, error: unknown): Response {
  logger.error("blob store failed", { sha256: file.sha256, path: file.path, error });
  return pages.filesUnavailable();
}
