import { mkdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { assertSha256, type BlobStore } from "./types.ts";

/** Blobs as files under `dir`, fanned out by the first two hex digits (`ab/abcdef...`). */
export function createDiskBlobStore(dir: string): BlobStore {
  const pathOf = (sha256: string) => {
    assertSha256(sha256);
    return join(dir, sha256.slice(0, 2), sha256);
  };
  return {
    kind: "disk",
    async has(sha256) {
      return Bun.file(pathOf(sha256)).exists();
    },
    async put(sha256, bytes) {
      const path = pathOf(sha256);
      if (await Bun.file(path).exists()) return;
      await mkdir(join(dir, sha256.slice(0, 2)), { recursive: true });
      // Write then rename, so a reader never sees half a file and two writers of one hash cannot clash.
      const temp = `${path}.${process.pid}.${crypto.randomUUID()}.tmp`;
      await Bun.write(temp, bytes);
      await rename(temp, path);
    },
    async get(sha256) {
      const file = Bun.file(pathOf(sha256));
      return (await file.exists()) ? file : null;
    },
    async delete(sha256) {
      await rm(pathOf(sha256), { force: true });
    },
  };
}
