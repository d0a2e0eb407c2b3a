import { inlineLimitProblem, ToolError, type PublishInput } from "@hatch/contracts";
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
  if (file.encoding === "utf8") {
    const bytes = new TextEncoder().encode(file.content);
    const wrong = binaryAsTextProblem(file.path, file.content, bytes);
    if (wrong) throw new ToolError("invalid_input", `${wrong} Nothing was published.`);
    return bytes;
  }
  const prefix = DATA_URL.exec(file.content)?.[0];
  if (prefix) {
    throw new ToolError(
      "invalid_input",
      `"${file.path}" is a data URL: send only what follows "${prefix}" as its content. Nothing was published.`,
    );
  }
  const cleaned = file.content.replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(cleaned) || cleaned.length % 4 === 1) {
    throw new ToolError(
      "invalid_input",
      `"${file.path}" is marked base64 but its content is not valid base64. Send text files with encoding utf8.`,
    );
  }
  return Buffer.from(cleaned, "base64");
}

const DATA_URL = /^data:[\w.+-]+\/[\w.+-]+(;[\w.+-]+=[\w.+-]+)*;base64,/i;
const AS_BASE64 = 'Send the file\'s bytes base64-encoded with encoding "base64", or publish with upload: true.';

/** How the first bytes of some binary formats read; a file of that kind sent as text must start with them. */
const SIGNATURES: Record<string, { kind: string; starts: number[] }> = {
  "image/png": { kind: "a PNG", starts: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] },
  "image/jpeg": { kind: "a JPEG", starts: [0xff, 0xd8, 0xff] },
  "image/gif": { kind: "a GIF", starts: [0x47, 0x49, 0x46, 0x38] },
  "image/webp": { kind: "a WebP", starts: [0x52, 0x49, 0x46, 0x46] },
  "image/x-icon": { kind: "an ICO", starts: [0x00, 0x00, 0x01, 0x00] },
  "font/woff": { kind: "a WOFF", starts: [0x77, 0x4f, 0x46, 0x46] },
  "font/woff2": { kind: "a WOFF2", starts: [0x77, 0x4f, 0x46, 0x32] },
  "application/pdf": { kind: "a PDF", starts: [0x25, 0x50, 0x44, 0x46] },
  "application/wasm": { kind: "a WebAssembly", starts: [0x00, 0x61, 0x73, 0x6d] },
  "application/zip": { kind: "a ZIP", starts: [0x50, 0x4b] },
};

/** Content types whose files are bytes, not text: sent as a UTF-8 string they can only be right by chance. */
function isBinaryType(type: string): boolean {
  if (type in SIGNATURES) return true;
  if (/^(image|font|audio|video)\//.test(type)) return !type.startsWith("image/svg");
  return ["model/gltf-binary", "application/vnd.ms-fontobject", "application/gzip", "application/x-tar"].includes(type);
}

/**
 * Why content sent as text cannot be the binary file its extension names, or null: base64 (or a data URL) sent without
 * encoding "base64" would be stored as that text; U+FFFD means the bytes were lost when the file was read as text; a
 * known format that does not start with its signature was changed by UTF-8 (bytes read one per character).
 */
export function binaryAsTextProblem(path: string, content: string, bytes: Uint8Array): string | null {
  const type = contentTypeOf(path);
  if (!isBinaryType(type)) return null;
  const prefix = DATA_URL.exec(content)?.[0];
  if (prefix)
    return `"${path}" is a data URL. Send only what follows "${prefix}" as its content, with encoding "base64".`;
  const compact = content.replace(/\s+/g, "");
  if (compact.length >= 8 && /^[A-Za-z0-9+/_-]+={0,2}$/.test(compact))
    return `"${path}" looks like base64 but has no encoding "base64", so it would be stored as that text. Send it again with encoding "base64".`;
  if (content.includes("\uFFFD"))
    return `"${path}" holds U+FFFD replacement characters: its bytes were lost when it was read as text. ${AS_BASE64}`;
  const signature = SIGNATURES[type];
  if (signature && !signature.starts.every((byte, i) => bytes[i] === byte))
    return `"${path}" does not start as ${signature.kind} file does: bytes sent as text are changed by UTF-8. ${AS_BASE64}`;
  return null;
}
