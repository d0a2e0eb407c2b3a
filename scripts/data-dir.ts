import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
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

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The pid of a live `bun run dev` holding this data dir (PGlite allows one process at a time), or null. */
export function devHolder(dataDir: string): number | null {
  const lock = join(dataDir, "dev.pid");
  if (!existsSync(lock)) return null;
  const pid = Number(readFileSync(lock, "utf8"));
  return pid && pid !== process.pid && isAlive(pid) ? pid : null;
}
