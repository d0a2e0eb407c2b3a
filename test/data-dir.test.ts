import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { lockDataDir } from "../scripts/data-dir.ts";
import { freePort } from "./support/servers.ts";

const ROOT = join(import.meta.dir, "..");
const dirs: string[] = [];
function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "hatch-data-"));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Reads a child's stdout until `marker` shows (or the child exits). */
async function waitFor(child: Bun.Subprocess<"ignore", "pipe", "pipe">, marker: string): Promise<string> {
  let seen = "";
  const decoder = new TextDecoder();
  for await (const chunk of child.stdout) {
    seen += decoder.decode(chunk);
    if (seen.includes(marker)) return seen;
  }
  return seen;
}

function devEnv(dataDir: string): Record<string, string> {
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    DATA_DIR: dataDir,
    PORT: String(freePort()),
    APP_PORT: String(freePort()),
    LOG_LEVEL: "warn",
  };
  delete env.DATABASE_URL;
  delete env.NATS_URL;
  delete env.HATCH_SECRET;
  return env;
}

// The embedded database (PGlite) must never be opened by two processes: `bun run dev` and `bun run admin` both
// take a kernel lock on the data dir, which a crash releases and a race cannot slip past (admin then asks dev).
describe("the data dir lock", () => {
  test("one holder at a time; released on release", () => {
    const dir = freshDir();
    const first = lockDataDir(dir, "first");
    expect(first.ok).toBe(true);
    const second = lockDataDir(dir, "second");
    expect(second).toEqual({ ok: false, holder: `first (pid ${process.pid})` });
    if (first.ok) first.release();
    const third = lockDataDir(dir, "third");
    expect(third.ok).toBe(true);
    if (third.ok) third.release();
  });

  test("a killed holder leaves no stale lock", async () => {
    const dir = freshDir();
    const script = `import { lockDataDir } from ${JSON.stringify(join(ROOT, "scripts/data-dir.ts"))}; const l = lockDataDir(${JSON.stringify(dir)}, "child"); console.log(l.ok ? "locked" : "refused"); setInterval(() => {}, 1000);`;
    const child = Bun.spawn(["bun", "-e", script], { cwd: ROOT, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
    expect(await waitFor(child, "locked")).toContain("locked");
    expect(lockDataDir(dir, "parent")).toEqual({ ok: false, holder: `child (pid ${child.pid})` });
    child.kill("SIGKILL");
    await child.exited;
    const after = lockDataDir(dir, "parent");
    expect(after.ok).toBe(true);
    if (after.ok) after.release();
  });

  test("two `bun run dev` started at once on one data dir: exactly one runs; admin goes through the one that runs", async () => {
    const dir = freshDir();
    const start = () =>
      Bun.spawn(["bun", "scripts/dev.ts"], {
        cwd: ROOT,
        env: devEnv(dir),
        stdout: "pipe",
        stderr: "pipe",
        stdin: "ignore",
      });
    const devs = [start(), start()];
    try {
      const outcomes = await Promise.all(
        devs.map(async (dev) => {
          const out = await waitFor(dev, "Hatch is running");
          if (out.includes("Hatch is running")) return "running";
          await dev.exited;
          return `exited ${dev.exitCode}: ${await new Response(dev.stderr).text()}`;
        }),
      );
      const running = outcomes.filter((o) => o === "running");
      expect(running).toHaveLength(1);
      const refused = outcomes.find((o) => o !== "running")!;
      expect(refused).toStartWith("exited 1");
      expect(refused).toContain("is in use by bun run dev (pid");

      const admin = Bun.spawn(
        [
          "bun",
          "run",
          "admin",
          "user:create",
          "--email",
          "ops@example.com",
          "--password",
          "long enough pw",
          "--name",
          "Ops",
        ],
        {
          cwd: ROOT,
          env: devEnv(dir),
          stdout: "pipe",
          stderr: "pipe",
        },
      );
      // It cannot open the database the running dev holds: it runs inside dev over the admin socket (test/admin.test.ts).
      expect(await admin.exited).toBe(0);
      expect(await new Response(admin.stdout).text()).toStartWith("Created user ops@example.com (usr_");
    } finally {
      for (const dev of devs) dev.kill("SIGTERM");
      await Promise.all(devs.map((dev) => dev.exited));
    }
  }, 180_000);
});
