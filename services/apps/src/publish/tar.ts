import { ToolError } from "@hatch/contracts";
import { gunzipSync } from "node:zlib";

// A folder uploaded as one tar (publish with `upload: true`): what the tar of macOS, Linux (GNU) and Windows 10+
// (bsdtar) writes: ustar headers with their name prefix, pax extended headers (long names, sizes) and GNU long
// names. Only regular files and folders: links, devices and FIFOs are refused, and so are absolute paths and `..`.

export interface TarFile {
  /** Relative to the folder, with `/`, no leading `./`. */
  path: string;
  bytes: Uint8Array;
}

const BLOCK = 512;
const decoder = new TextDecoder();

/** True when the bytes start like gzip (1f 8b). */
export function isGzip(data: Uint8Array): boolean {
  return data.byteLength >= 2 && data[0] === 0x1f && data[1] === 0x8b;
}

/**
 * Unpacks gzip, refusing more than `maxBytes` of output. Returns null when it would be larger (the caller
 * answers 413); a damaged stream is refused as such.
 */
export function gunzipAtMost(data: Uint8Array, maxBytes: number): Uint8Array | null {
  try {
    return gunzipSync(data, { maxOutputLength: maxBytes });
  } catch (error) {
    if (error instanceof RangeError || (error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") return null;
    throw new ToolError(
      "invalid_input",
      "The upload looks like gzip but could not be unpacked (cut off or damaged). Run the command again; nothing was published.",
    );
  }
}

/** The files of a tar archive, in archive order. Folders and macOS `._` resource files are skipped. */
export function readTar(data: Uint8Array): TarFile[] {
  if (data.byteLength === 0)
    throw new ToolError(
      "invalid_input",
      "The upload is empty. Send the built folder as a tar: tar -C dist -cf - . | curl -sS --fail-with-body -T - <url>",
    );
  const files: TarFile[] = [];
  let offset = 0;
  let pax: Record<string, string> = {};
  let longName: string | null = null;
  let entries = 0;
  while (true) {
    if (offset + BLOCK > data.byteLength) {
      // Some writers stop without the two zero blocks; anything else is a cut-off archive.
      if (offset === data.byteLength && entries > 0) break;
      throw cutOff();
    }
    const header = data.subarray(offset, offset + BLOCK);
    if (header.every((b) => b === 0)) break;
    if (!checksumOk(header)) {
      if (entries === 0)
        throw new ToolError(
          "invalid_input",
          "The upload is not a tar archive (plain or gzip). Send the built folder with: tar -C dist -cf - . | curl -sS --fail-with-body -T - <url>",
        );
      throw new ToolError(
        "invalid_input",
        `The tar archive is damaged after ${entries} entries. Run the command again; nothing was published.`,
      );
    }
    entries++;
    const type = String.fromCharCode(header[156] || 0x30);
    const meta = type === "x" || type === "g" || type === "L" || type === "K";
    const size = !meta && pax.size !== undefined ? Number(pax.size) : readNumber(header.subarray(124, 136));
    if (!Number.isSafeInteger(size) || size < 0)
      throw new ToolError(
        "invalid_input",
        "The tar archive has an entry with an invalid size. Create it again with tar.",
      );
    const start = offset + BLOCK;
    const end = start + size;
    if (end > data.byteLength) throw cutOff();
    const body = data.subarray(start, end);
    offset = start + Math.ceil(size / BLOCK) * BLOCK;

    if (type === "x") {
      pax = { ...pax, ...parsePax(body) };
      continue;
    }
    if (type === "g") continue; // global pax header: nothing Hatch uses
    if (type === "L") {
      longName = cString(body);
      continue;
    }
    if (type === "K") continue; // GNU long link name: the link itself is refused below
    const rawName = pax.path ?? longName ?? headerName(header);
    pax = {};
    longName = null;
    const path = tarPath(rawName);
    if (type === "5") continue;
    if (type === "V") continue; // volume label
    if (type === "1" || type === "2") {
      throw new ToolError(
        "invalid_input",
        `"${rawName}" is a ${type === "2" ? "symbolic" : "hard"} link; Hatch publishes files only. Copy the file in its place, or add -h to tar (it follows links), and run the command again.`,
      );
    }
    if (type === "3" || type === "4" || type === "6") {
      throw new ToolError(
        "invalid_input",
        `"${rawName}" is a ${type === "6" ? "named pipe" : "device"}, not a file. Publish only the built folder (e.g. dist/).`,
      );
    }
    if (type !== "0" && type !== "7") {
      throw new ToolError(
        "invalid_input",
        `"${rawName}" has tar entry type "${type}", which Hatch does not accept (only files and folders). Create the archive with plain tar -cf.`,
      );
    }
    if (path === null) continue; // the folder itself (".")
    if (isAppleDouble(path, body)) continue;
    files.push({ path, bytes: body });
  }
  return files;
}

function cutOff(): ToolError {
  return new ToolError(
    "invalid_input",
    "The tar archive ends in the middle of a file: the upload was cut off. Run the command again; nothing was published.",
  );
}

/** The entry's path relative to the folder, or null for the folder itself; refuses absolute paths and `..`. */
function tarPath(name: string): string | null {
  if (name.startsWith("/") || /^[A-Za-z]:[\\/]/.test(name)) {
    throw new ToolError(
      "invalid_input",
      `The archive holds the absolute path "${name}". Archive from inside the built folder: tar -C dist -cf - . (the dot is the folder's content).`,
    );
  }
  const parts = name.split("/").filter((p) => p !== "" && p !== ".");
  if (parts.includes("..")) {
    throw new ToolError(
      "invalid_input",
      `The archive holds the path "${name}", which leaves the folder (..). Archive from inside the built folder: tar -C dist -cf - .`,
    );
  }
  return parts.length === 0 ? null : parts.join("/");
}

function headerName(header: Uint8Array): string {
  const name = cString(header.subarray(0, 100));
  // POSIX ustar ("ustar\0" + "00") keeps a prefix for long names; GNU's "ustar  " uses those bytes for other things.
  const magic = decoder.decode(header.subarray(257, 263));
  if (magic !== "ustar\0") return name;
  const prefix = cString(header.subarray(345, 500));
  return prefix ? `${prefix}/${name}` : name;
}

function cString(bytes: Uint8Array): string {
  const end = bytes.indexOf(0);
  return decoder.decode(end === -1 ? bytes : bytes.subarray(0, end));
}

/** An octal field (NUL/space padded), or GNU's base-256 form (first byte's high bit set) for large values. */
function readNumber(field: Uint8Array): number {
  if (field[0]! & 0x80) {
    let value = field[0]! & 0x7f;
    for (let i = 1; i < field.length; i++) value = value * 256 + field[i]!;
    return value;
  }
  const text = cString(field).trim();
  return text === "" ? 0 : Number.parseInt(text, 8);
}

/** The header checksum: the sum of its bytes with the checksum field read as spaces (unsigned or signed). */
function checksumOk(header: Uint8Array): boolean {
  const stored = readNumber(header.subarray(148, 156));
  if (!Number.isFinite(stored)) return false;
  let unsigned = 0;
  let signed = 0;
  for (let i = 0; i < BLOCK; i++) {
    const b = i >= 148 && i < 156 ? 0x20 : header[i]!;
    unsigned += b;
    signed += b > 127 ? b - 256 : b;
  }
  return stored === unsigned || stored === signed;
}

/** pax records: "<length> <key>=<value>\n", length counting the whole record. */
function parsePax(body: Uint8Array): Record<string, string> {
  const out: Record<string, string> = {};
  let offset = 0;
  while (offset < body.byteLength) {
    const space = body.indexOf(0x20, offset);
    if (space === -1) break;
    const length = Number.parseInt(decoder.decode(body.subarray(offset, space)), 10);
    if (!Number.isSafeInteger(length) || length <= 0 || offset + length > body.byteLength) {
      throw new ToolError(
        "invalid_input",
        "The tar archive has a damaged extended (pax) header. Create it again with tar.",
      );
    }
    const record = decoder.decode(body.subarray(space + 1, offset + length - 1));
    const eq = record.indexOf("=");
    if (eq > 0) out[record.slice(0, eq)] = record.slice(eq + 1);
    offset += length;
  }
  return out;
}

/** macOS tar adds `._name` files holding extended attributes (AppleDouble, magic 00 05 16 07): not part of the app. */
function isAppleDouble(path: string, body: Uint8Array): boolean {
  const base = path.slice(path.lastIndexOf("/") + 1);
  return (
    base.startsWith("._") &&
    body.byteLength >= 4 &&
    body[0] === 0x00 &&
    body[1] === 0x05 &&
    body[2] === 0x16 &&
    body[3] === 0x07
  );
}
