// A small tar writer for tests and the bench: ustar headers, a pax header for names over 100 bytes, and any entry
// type (links, devices, absolute or `..` names) so the server's refusals can be tested with exact archives.

export interface TarEntry {
  name: string;
  /** Tar type flag: "0" file (default), "5" folder, "1" hard link, "2" symlink, "3" char device, … */
  type?: string;
  body?: Uint8Array | string;
  linkname?: string;
}

const encoder = new TextEncoder();

function header(name: string, size: number, type: string, linkname = ""): Uint8Array {
  const h = new Uint8Array(512);
  const put = (text: string, offset: number, length: number) => h.set(encoder.encode(text).subarray(0, length), offset);
  const octal = (value: number, offset: number, length: number) =>
    put(`${value.toString(8).padStart(length - 1, "0")}\0`, offset, length);
  put(name, 0, 100);
  octal(0o644, 100, 8);
  octal(0, 108, 8);
  octal(0, 116, 8);
  octal(size, 124, 12);
  octal(Math.floor(Date.now() / 1000), 136, 12);
  put(" ".repeat(8), 148, 8);
  put(type, 156, 1);
  put(linkname, 157, 100);
  put("ustar\u000000", 257, 8);
  let sum = 0;
  for (const b of h) sum += b;
  put(`${sum.toString(8).padStart(6, "0")}\0 `, 148, 8);
  return h;
}

function padded(bytes: Uint8Array): Uint8Array[] {
  const pad = (512 - (bytes.byteLength % 512)) % 512;
  return [bytes, new Uint8Array(pad)];
}

function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let length = body.length + 1;
  while (`${length}${body}`.length !== length) length = `${length}${body}`.length;
  return `${length}${body}`;
}

export function makeTar(entries: readonly TarEntry[]): Uint8Array<ArrayBuffer> {
  const parts: Uint8Array[] = [];
  for (const entry of entries) {
    const body = typeof entry.body === "string" ? encoder.encode(entry.body) : (entry.body ?? new Uint8Array());
    let name = entry.name;
    if (encoder.encode(name).byteLength > 100) {
      const pax = encoder.encode(paxRecord("path", name));
      parts.push(header("PaxHeader", pax.byteLength, "x"), ...padded(pax));
      name = name.slice(0, 99);
    }
    parts.push(header(name, body.byteLength, entry.type ?? "0", entry.linkname), ...padded(body));
  }
  parts.push(new Uint8Array(1024));
  const total = parts.reduce((s, p) => s + p.byteLength, 0);
  const out = new Uint8Array(total);
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.byteLength;
  }
  return out;
}

/** A folder (path → bytes) as a tar, entries named `./path` as `tar -C dir -cf - .` writes them. */
export function folderTar(folder: ReadonlyMap<string, Uint8Array>): Uint8Array<ArrayBuffer> {
  return makeTar([{ name: "./", type: "5" }, ...[...folder].map(([path, body]) => ({ name: `./${path}`, body }))]);
}
