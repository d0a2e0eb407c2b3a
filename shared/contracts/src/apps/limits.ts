import { formatBytes } from "../text.ts";

/**
 * What `publish` takes inline, and an app's name: the contract's input refuses more (the gateway checks before the
 * call goes on the bus, and the apps service again). The limits of a whole published folder are the apps service's
 * own (services/apps/src/spec/limits.ts), which adds to these. Sizes are bytes.
 */
export const PUBLISH_INPUT_LIMITS = {
  /** Inline publishing: files per call, and their decoded bytes together (larger folders use a manifest). */
  maxInlineFiles: 500,
  maxInlineBytes: 3 * 1024 * 1024,
  /** Characters of an app's name. */
  maxNameLength: 80,
} as const;

/** Decoded bytes of inline files, counted without decoding (base64: 3 bytes per 4 characters, less the padding). */
export function inlineBytes(files: readonly { content: string; encoding?: "utf8" | "base64" }[]): number {
  let total = 0;
  for (const file of files) {
    if (file.encoding !== "base64") {
      total += Buffer.byteLength(file.content, "utf8");
      continue;
    }
    const cleaned = file.content.replace(/\s+/g, "");
    total += Math.floor((cleaned.length * 3) / 4) - (cleaned.endsWith("==") ? 2 : cleaned.endsWith("=") ? 1 : 0);
  }
  return total;
}

const USE_UPLOAD =
  "Nothing was published. Call publish with upload: true instead (no files): it answers with one shell command that uploads the built folder.";

/** The refusal of more inline files than one call takes (the contract's limit on `files`), given what was sent. */
export function inlineFilesProblem(files: unknown): string {
  const sent = Array.isArray(files) ? `${files.length} files` : "Too many files";
  return `${sent} inline; inline publishing takes at most ${PUBLISH_INPUT_LIMITS.maxInlineFiles}. ${USE_UPLOAD}`;
}

/**
 * Why inline files are over the limit, or null. The gateway checks this before the call goes on the bus and the
 * apps service again before storing (both answer limit_exceeded).
 */
export function inlineLimitProblem(files: readonly { content: string; encoding?: "utf8" | "base64" }[]): string | null {
  const total = inlineBytes(files);
  if (total <= PUBLISH_INPUT_LIMITS.maxInlineBytes) return null;
  return `These inline files hold ${formatBytes(total)}; inline files may hold at most ${formatBytes(PUBLISH_INPUT_LIMITS.maxInlineBytes)} in all. ${USE_UPLOAD}`;
}
