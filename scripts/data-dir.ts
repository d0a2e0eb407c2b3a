import { dlopen, FFIType } from "bun:ffi";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  existsSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";

/**
 * The embedded default keeps its deployment secret in the data dir, so tokens survive a restart of
 * `bun run dev` without anyone having to set HATCH_SECRET.
 */
export function dataDirSecret(dataDir: string): string {
  const file = join(dataDir, "secret");
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32).toString("hex");
  writeFileSync(file, secret + "\n", { mode: 0o600 });
  chmodSync(file, 0o600);
  return secret;
}

const LOCK_EX = 2;
const LOCK_NB = 4;

/** flock(2) from the C library; null where it cannot be loaded (a platform without it: no lock is taken, said on stderr). */
function loadFlock(): ((fd: number, operation: number) => number) | null {
  const names = process.platform === "darwin" ? ["libc.dylib", "libSystem.B.dylib"] : ["libc.so.6", "libc.so"];
  for (const name of names) {
    try {
      const lib = dlopen(name, { flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 } });
      return (fd, operation) => lib.symbols.flock(fd, operation);
    } catch {
      // try the next name
    }
  }
  return null;
}

export type DataDirLock = { ok: true; release(): void } | { ok: false; holder: string };

/**
 * Takes the data dir for this process: an exclusive `flock` on `<dataDir>/lock`, held until the process exits
 * (the kernel drops it even on a crash, so no stale lock survives). PGlite allows one process at a time, and
 * `bun run dev` and `bun run admin` both open it, so both take this lock first. `holder` says who has it.
 */
export function lockDataDir(dataDir: string, purpose: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, "lock");
  const fd = openSync(file, "a+");
  const flock = loadFlock();
  if (!flock)
    process.stderr.write(`Could not lock ${dataDir} on this platform: make sure only one Hatch process uses it.\n`);
  if (flock && flock(fd, LOCK_EX | LOCK_NB) !== 0) {
    closeSync(fd);
    const holder = readFileSync(file, "utf8").trim();
    return { ok: false, holder: holder || "another process" };
  }
  ftruncateSync(fd, 0);
  writeSync(fd, `${purpose} (pid ${process.pid})\n`);
  // The descriptor stays open: closing it would drop the lock.
  return {
    ok: true,
    release() {
      ftruncateSync(fd, 0);
      closeSync(fd);
    },
  };
}
