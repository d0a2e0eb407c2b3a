import { formatBytes, hasControlChars } from "@hatch/contracts";
import { DATA_LIMITS, DATA_NAME, type BucketOperation, type DataRule } from "../spec/data-rules.ts";
import { methodNotAllowed, DataError, json } from "../http/answers.ts";
import { type DataRequest } from "./request.ts";
import { etagMatches } from "../http/paths.ts";
import { allows, refusal } from "../http/rules.ts";
import { checkSameOrigin, type DataCaller } from "../http/caller.ts";
import { storageLimitOf } from "./storage-limit.ts";
import { getFile, isFileId, listFiles, readUpload, removeFile, saveFile, type StoredFile } from "./files.ts";

// `/_hatch/files/<bucket>[/<id>]`: the files of an app's buckets (service.json `buckets`), under the bucket's rules.
// Uploaded bytes are untrusted: they are served sandboxed, never sniffed, and inline only when a browser cannot
// run them.

type BucketRules = Record<BucketOperation, DataRule> & { maxFileSize: number };

/** No script, no plugin, no form, no navigation out: an uploaded HTML or SVG file opened directly can do nothing. */
export const FILE_CSP =
  "sandbox; default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'unsafe-inline'";

export async function answerBuckets(req: DataRequest): Promise<Response> {
  const { request, rest, caller } = req;
  const method = request.method;
  if (method !== "GET" && method !== "HEAD") checkSameOrigin(request, req.deps.ctx.config, caller.app.address);
  const slash = rest.indexOf("/");
  const name = slash < 0 ? rest : rest.slice(0, slash);
  const rules = requireBucket(caller, name);
  if (slash < 0) {
    if (method === "POST") return upload(req, name, rules);
    if (method === "GET") return list(req, name, rules);
    return methodNotAllowed("GET, POST");
  }
  const id = rest.slice(slash + 1);
  if (!isFileId(id)) throw new DataError("not_found", `There is no file at this address in the bucket "${name}".`);
  if (method === "GET" || method === "HEAD") return serve(req, name, rules, id);
  if (method === "DELETE") return remove(req, name, rules, id);
  return methodNotAllowed("GET, DELETE");
}

function requireBucket(caller: DataCaller, name: string): BucketRules {
  const buckets = caller.app.site?.buckets ?? new Map<string, BucketRules>();
  const rules = buckets.get(name);
  if (rules) return rules;
  const declared = [...buckets.keys()].sort();
  const which = DATA_NAME.test(name) ? `no bucket "${name}"` : "no such bucket";
  const known = declared.length
    ? `Its service.json declares: ${declared.join(", ")}.`
    : "Its service.json declares no buckets (add `buckets` to service.json and publish).";
  throw new DataError("not_found", `This app has ${which}. ${known}`);
}

async function upload(req: DataRequest, bucket: string, rules: BucketRules): Promise<Response> {
  const { request, url, caller } = req;
  if (!allows(rules.create, caller)) throw refusal(rules.create, caller, "upload files to this bucket");
  const name = fileName(url.searchParams.get("name"));
  const contentType = mediaType(request.headers.get("content-type"));
  const tooLarge = `The bucket "${bucket}" takes files of at most ${formatBytes(rules.maxFileSize)}.`;
  const declared = request.headers.get("content-length");
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > rules.maxFileSize) {
    throw new DataError("too_large", `This file is ${formatBytes(Number(declared))}. ${tooLarge}`);
  }
  const body = await readUpload(request.body, rules.maxFileSize);
  if (!body) throw new DataError("too_large", `This file is larger than that. ${tooLarge}`);
  const storage = await storageLimitOf(req.deps.ctx, caller.app.accountId);
  const file = await saveFile(req.deps.ctx, {
    appId: caller.app.id,
    bucket,
    name,
    contentType,
    ...body,
    viewer: caller.viewer,
    storage,
  });
  return json(wireFile(bucket, file), 201);
}

async function list(req: DataRequest, bucket: string, rules: BucketRules): Promise<Response> {
  const { url, caller } = req;
  const allowed = allows(rules.read, caller);
  if (!allowed) throw refusal(rules.read, caller, "see the files of this bucket");
  const limit = listLimit(url.searchParams.get("limit"));
  const createdBy = allowed === "creator" ? caller.viewer!.sub : undefined;
  const page = await listFiles(req.deps.ctx.db, {
    appId: caller.app.id,
    bucket,
    createdBy,
    limit,
    after: url.searchParams.get("after"),
  });
  return json({ files: page.files.map((file) => wireFile(bucket, file)), next: page.next });
}

async function serve(req: DataRequest, bucket: string, rules: BucketRules, id: string): Promise<Response> {
  const { request, caller, deps } = req;
  const allowed = allows(rules.read, caller);
  if (!allowed) throw refusal(rules.read, caller, "open the files of this bucket");
  const file = await getFile(deps.ctx.db, caller.app.id, bucket, id);
  // Under `creator` someone else's file is as good as missing.
  if (!file || (allowed === "creator" && file.createdBy !== caller.viewer!.sub)) {
    throw new DataError(
      "not_found",
      `There is no file with this id in the bucket "${bucket}" (it may have been removed).`,
    );
  }
  const headers = fileHeaders(file);
  if (etagMatches(request.headers.get("if-none-match"), headers.ETag))
    return new Response(null, { status: 304, headers });
  if (request.method === "HEAD")
    return new Response(null, { headers: { ...headers, "Content-Length": String(file.size) } });
  const blob = await deps.ctx.blobs.get(file.sha256);
  if (!blob) {
    deps.log.error("bucket file missing from the store", { sha256: file.sha256, file: file.id });
    throw new DataError("unavailable", "This file cannot be read right now. Try again later.");
  }
  // A stream, never the Blob itself: Bun would answer an S3 file with a redirect to the store.
  return new Response(blob.stream(), { headers: { ...headers, "Content-Length": String(file.size) } });
}

async function remove(req: DataRequest, bucket: string, rules: BucketRules, id: string): Promise<Response> {
  const { caller } = req;
  const allowed = allows(rules.delete, caller);
  if (!allowed) throw refusal(rules.delete, caller, "remove files from this bucket");
  const removed = await removeFile(req.deps.ctx, caller.app.id, bucket, id, (file) => {
    if (allowed === "creator" && file.createdBy !== caller.viewer!.sub) {
      throw new DataError(
        "forbidden",
        `Only whoever uploaded a file may remove it from "${bucket}", and this one is not yours.`,
      );
    }
  });
  if (!removed)
    throw new DataError(
      "not_found",
      `There is no file with this id in the bucket "${bucket}" (it may have been removed already).`,
    );
  return json({ id, removed: true });
}

function wireFile(bucket: string, file: StoredFile) {
  return {
    id: file.id,
    name: file.name,
    size: file.size,
    contentType: file.contentType,
    createdAt: file.createdAt.toISOString(),
    createdBy: file.createdByEmail,
    url: `/_hatch/files/${bucket}/${file.id}`,
  };
}

function fileName(given: string | null): string {
  const name = given?.trim() ?? "";
  if (!name)
    throw new DataError("invalid", 'Name the file: upload(file, { name: "photo.jpg" }) (the `name` query parameter).');
  if (hasControlChars(name))
    throw new DataError(
      "invalid",
      "The file name must not contain control characters (line breaks, tabs and the like).",
    );
  if ([...name].length > DATA_LIMITS.maxFileNameLength) {
    throw new DataError(
      "invalid",
      `The file name is longer than ${DATA_LIMITS.maxFileNameLength} characters; use a shorter one.`,
    );
  }
  return name;
}

const TOKEN = "[A-Za-z0-9!#$&^_.+-]+";
const MEDIA_TYPE = new RegExp(`^(${TOKEN}/${TOKEN})((?:\\s*;\\s*${TOKEN}=(?:${TOKEN}|"[^"\\\\]*"))*)\\s*$`);
const CHARSET = /;\s*charset=("?)([A-Za-z0-9._:-]{1,40})\1\s*(?:;|$)/i;

/** The file's type as sent (essence and charset only); application/octet-stream when none. */
function mediaType(header: string | null): string {
  if (header === null || header.trim() === "") return "application/octet-stream";
  const match = header.length <= 200 ? MEDIA_TYPE.exec(header.trim()) : null;
  if (!match)
    throw new DataError(
      "invalid",
      "The Content-Type header must be a media type such as image/png (the Blob's or File's type).",
    );
  const charset = CHARSET.exec(match[2] ?? "");
  return `${match[1]!.toLowerCase()}${charset ? `; charset=${charset[2]!.toLowerCase()}` : ""}`;
}

function listLimit(given: string | null): number {
  if (given === null) return DATA_LIMITS.defaultListLimit;
  const limit = /^\d{1,4}$/.test(given) ? Number(given) : 0;
  if (limit < 1 || limit > DATA_LIMITS.maxListLimit) {
    throw new DataError("invalid", `limit must be a whole number from 1 to ${DATA_LIMITS.maxListLimit}.`);
  }
  return limit;
}

/** What an uploaded file is served with; ETag by content. */
function fileHeaders(file: StoredFile): Record<string, string> & { ETag: string } {
  return {
    "Content-Type": file.contentType,
    "Content-Disposition": contentDisposition(file.name, isInlineSafe(file.contentType)),
    "Content-Security-Policy": FILE_CSP,
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "private, no-cache",
    ETag: `"${file.sha256}"`,
  };
}

/** Types a browser shows without running anything: images (not SVG, which holds script), audio, video, PDF, plain text. */
function isInlineSafe(contentType: string): boolean {
  const essence = contentType.split(";")[0]!.trim().toLowerCase();
  if (essence === "application/pdf" || essence === "text/plain") return true;
  const [top, sub = ""] = essence.split("/") as [string, string?];
  if (top === "image") return !sub.includes("svg") && !sub.includes("xml");
  return top === "audio" || top === "video";
}

/** RFC 6266: an ASCII fallback name and the exact name in UTF-8 (RFC 8187 encoding). */
function contentDisposition(name: string, inline: boolean): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\%]/g, "_");
  const exact = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${inline ? "inline" : "attachment"}; filename="${ascii}"; filename*=UTF-8''${exact}`;
}
