import { inlineLimitProblem, ToolError, type PublishInput } from "@hatch/shared";
import { contentTypeOf, type FolderEntry } from "./folder.ts";

export interface InlineFolder {
  entries: FolderEntry[];
  /** Decoded bytes by sha256 (equal files are stored once). */
  bytes: Map<string, Uint8Array>;
}

type InlineFile = NonNullable<PublishInput["files"]>[number];

/** Decodes inline files and hashes them; nothing is stored here. */
export function decodeInline(files: readonly InlineFile[]): InlineFolder {
  const over = inlineLimitProblem(files);
  if (over) throw new ToolError("limit_exceeded", over);
  const entries: FolderEntry[] = [];
  const bytes = new Map<string, Uint8Array>();
  for (const file of files) {
    const data = decode(file);
    const sha256 = new Bun.CryptoHasher("sha256").update(data).digest("hex");
    bytes.set(sha256, data);
    entries.push({ path: file.path, sha256, size: data.byteLength, contentType: contentTypeOf(file.path) });
  }
  return { entries, bytes };
}

function decode(file: InlineFile): Uint8Array {
  if (file.encoding === "utf8") return new TextEncoder().encode(file.content);
  const cleaned = file.content.replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(cleaned) || cleaned.length % 4 === 1) {
    throw new ToolError(
      "invalid_input",
      `"${file.path}" is marked base64 but its content is not valid base64. Send text files with encoding utf8.`,
    );
  }
  return Buffer.from(cleaned, "base64");
}
