import { describe, expect, test } from "bun:test";
import { isToolError } from "@hatch/contracts";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipAtMost, isGzip, readTar } from "../src/publish/tar.ts";
import { makeTar } from "../../../test/support/publish-tar.ts";

// The tar reader behind publish { upload: true }, on archives written by the system's tar in each format it
// writes (GNU long names, pax, ustar prefix) and on crafted entries it must refuse.

const LONG = `assets/${"deep-folder-name/".repeat(8)}chunk-with-a-rather-long-file-name.js`;

function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), "hatch-tar-"));
  mkdirSync(join(dir, LONG.slice(0, LONG.lastIndexOf("/"))), { recursive: true });
  writeFileSync(join(dir, "index.html"), "<!doctype html><h1>hi</h1>");
  writeFileSync(join(dir, LONG), "console.log('long')");
  writeFileSync(join(dir, "empty.txt"), "");
  return dir;
}

async function systemTar(dir: string, ...flags: string[]): Promise<Uint8Array<ArrayBuffer>> {
  const proc = Bun.spawn(["tar", ...flags, "-C", dir, "-cf", "-", "."], { stdout: "pipe", stderr: "pipe" });
  const out = new Uint8Array(await new Response(proc.stdout).arrayBuffer());
  expect(await proc.exited).toBe(0);
  return out;
}

function refusal(data: Uint8Array): string {
  try {
    readTar(data);
  } catch (error) {
    if (isToolError(error)) return `${error.code}: ${error.message}`;
    throw error;
  }
  throw new Error("expected a refusal");
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

describe("publish-upload tar reader", () => {
  for (const format of ["gnu", "pax", "ustar"]) {
    test(`reads the system tar's ${format} format: files with ./ stripped, folders skipped, long names whole`, async () => {
      const dir = folder();
      const files = readTar(await systemTar(dir, `--format=${format}`));
      const byPath = new Map(files.map((f) => [f.path, text(f.bytes)]));
      expect([...byPath.keys()].sort()).toEqual(["empty.txt", "index.html", LONG].sort());
      expect(byPath.get("index.html")).toBe("<!doctype html><h1>hi</h1>");
      expect(byPath.get(LONG)).toBe("console.log('long')");
      expect(byPath.get("empty.txt")).toBe("");
    });
  }

  test("gzip is recognised by its magic bytes and unpacked up to a cap", async () => {
    const tar = await systemTar(folder());
    const gz = Bun.gzipSync(tar);
    expect(isGzip(gz)).toBe(true);
    expect(isGzip(tar)).toBe(false);
    expect(readTar(gunzipAtMost(gz, 10 * 1024 * 1024)!).map((f) => f.path)).toContain("index.html");
    expect(gunzipAtMost(gz, 1024)).toBeNull();
    expect(() => gunzipAtMost(gz.subarray(0, 40), 10_000_000)).toThrow("could not be unpacked");
  });

  test("a symbolic link written by the system tar is refused, naming the entry and tar -h", async () => {
    const dir = folder();
    symlinkSync("index.html", join(dir, "link.html"));
    const message = refusal(await systemTar(dir));
    expect(message).toContain('"./link.html" is a symbolic link');
    expect(message).toContain("-h");
  });

  test("hard links, devices, FIFOs, absolute paths and .. are refused with what to do", () => {
    const index = { name: "index.html", body: "<h1>x</h1>" };
    expect(refusal(makeTar([index, { name: "copy.html", type: "1", linkname: "index.html" }]))).toContain(
      '"copy.html" is a hard link',
    );
    expect(refusal(makeTar([index, { name: "dev/null", type: "3" }]))).toContain("is a device");
    expect(refusal(makeTar([index, { name: "pipe", type: "6" }]))).toContain("is a named pipe");
    expect(refusal(makeTar([index, { name: "/etc/passwd", body: "root" }]))).toBe(
      'invalid_input: The archive holds the absolute path "/etc/passwd". Archive from inside the built folder: tar -C dist -cf - . (the dot is the folder\'s content).',
    );
    expect(refusal(makeTar([index, { name: "./../outside.js", body: "x" }]))).toContain(
      'the path "./../outside.js", which leaves the folder (..)',
    );
    expect(refusal(makeTar([index, { name: "assets/../../x.js", body: "x" }]))).toContain("leaves the folder");
  });

  test("not a tar, an empty body and a cut-off archive are told apart", () => {
    expect(refusal(new TextEncoder().encode("<!doctype html>".repeat(100)))).toContain(
      "is not a tar archive (plain or gzip)",
    );
    expect(refusal(new Uint8Array())).toContain("The upload is empty");
    const whole = makeTar([{ name: "index.html", body: "x".repeat(2000) }]);
    expect(refusal(whole.subarray(0, 1024))).toContain("ends in the middle of a file");
  });

  test("macOS resource files (._name, AppleDouble) are skipped; a plain ._ file is kept", () => {
    const appleDouble = new Uint8Array([0x00, 0x05, 0x16, 0x07, 0, 2, 0, 0]);
    const files = readTar(
      makeTar([
        { name: "./index.html", body: "<h1>x</h1>" },
        { name: "./._index.html", body: appleDouble },
        { name: "./._notes.txt", body: "mine" },
      ]),
    );
    expect(files.map((f) => f.path)).toEqual(["index.html", "._notes.txt"]);
  });

  test("a pax path longer than 100 bytes from the test writer reads back whole", () => {
    const files = readTar(
      makeTar([
        { name: "index.html", body: "<h1>x</h1>" },
        { name: LONG, body: "y" },
      ]),
    );
    expect(files.map((f) => f.path)).toEqual(["index.html", LONG]);
  });
});
