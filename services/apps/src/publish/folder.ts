import { describeIssues, formatBytes, ToolError, plural } from "@hatch/contracts";
import { PUBLISH_LIMITS } from "../spec/limits.ts";
import { SERVICE_JSON_KEYS, ServiceJsonSchema, type ServiceJson } from "../spec/service-json.ts";

/** One file of a version: where it is served, which blob holds it, and how it is served. */
export interface FolderEntry {
  path: string;
  sha256: string;
  size: number;
  contentType: string;
}

const SERVICE_JSON = "service.json";

/**
 * Checks a folder listing before anything is stored: paths stay inside the folder, no duplicates, an
 * index.html at the root, and the documented limits. Paths were already shape-checked by the contract.
 */
export function checkFolder(entries: readonly { path: string; size: number }[]): void {
  if (entries.length > PUBLISH_LIMITS.maxFiles) {
    throw new ToolError(
      "limit_exceeded",
      `The folder has ${plural(entries.length, "file")}; a version may have at most ${PUBLISH_LIMITS.maxFiles}. Publish only the built output (e.g. dist/), not node_modules or sources.`,
    );
  }
  const seen = new Set<string>();
  let total = 0;
  for (const entry of entries) {
    if (!isSafePath(entry.path)) {
      throw new ToolError(
        "invalid_input",
        `The path "${entry.path}" is not allowed: paths are relative to the built folder, with no .. parts, .git folders or control characters, e.g. assets/app.js.`,
      );
    }
    const key = entry.path.normalize("NFC");
    if (seen.has(key))
      throw new ToolError("invalid_input", `The path "${entry.path}" is listed twice. List each file once.`);
    seen.add(key);
    if (entry.size > PUBLISH_LIMITS.maxFileBytes) {
      throw new ToolError(
        "limit_exceeded",
        `"${entry.path}" is ${formatBytes(entry.size)}; one file may be at most ${formatBytes(PUBLISH_LIMITS.maxFileBytes)}.`,
      );
    }
    total += entry.size;
  }
  if (total > PUBLISH_LIMITS.maxTotalBytes) {
    throw new ToolError(
      "limit_exceeded",
      `The folder holds ${formatBytes(total)}; a version may hold at most ${formatBytes(PUBLISH_LIMITS.maxTotalBytes)}.`,
    );
  }
  if (!seen.has("index.html")) {
    throw new ToolError(
      "invalid_input",
      "The folder has no index.html at its root. Publish the built output folder (the one that contains index.html, e.g. dist/), with paths relative to it.",
    );
  }
}

/** Relative, no empty/`.`/`..` segments, no backslashes or control characters, no hidden `.git` folders. */
function isSafePath(path: string): boolean {
  if (path.startsWith("/") || path.includes("\\") || /[\u0000-\u001f\u007f]/.test(path)) return false;
  const parts = path.split("/");
  return parts.every((p) => p !== "" && p !== "." && p !== "..") && !parts.includes(".git");
}

/** The content type the app host sends for a path (by extension; unknown types download as bytes). */
export function contentTypeOf(path: string): string {
  // A path with control characters is refused by checkFolder; Bun.file throws on a NUL.
  if (/[\u0000-\u001f]/.test(path)) return "application/octet-stream";
  const type = Bun.file(`/${path}`).type;
  return type || "application/octet-stream";
}

/** Parses service.json; a bad one is refused with what to fix. Absent → the defaults. */
export function parseServiceJson(bytes: Uint8Array | null): ServiceJson {
  if (!bytes) return ServiceJsonSchema.parse({});
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new ToolError(
      "invalid_input",
      `${SERVICE_JSON} is not valid JSON. Fix it (it must be one JSON object, e.g. {"spa": true}) and publish again.`,
    );
  }
  const parsed = ServiceJsonSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ToolError(
      "invalid_input",
      `${SERVICE_JSON} is not valid: ${describeIssues(parsed.error)}. Known keys: ${SERVICE_JSON_KEYS.join(", ")} (see service_docs, topic service_json).`,
    );
  }
  return parsed.data;
}

export function checkNotFoundPage(config: ServiceJson, paths: ReadonlySet<string>): void {
  if (config.notFound && !paths.has(config.notFound)) {
    throw new ToolError(
      "invalid_input",
      `${SERVICE_JSON} names "${config.notFound}" as its notFound page, but the folder has no such file.`,
    );
  }
}

export const SERVICE_JSON_PATH = SERVICE_JSON;
