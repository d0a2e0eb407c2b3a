import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createNatsBus, deleteEventsStream, EXIT_CODES } from "@hatch/platform";
import { allGone, childPids, collect, isAlive, logLines } from "./support/processes.ts";
import { TEST_SECRET } from "./support/hatch.ts";
import { freePort, freshDatabase, realServers, testBlobDir, uniqueName } from "./support/servers.ts";

// `bun run cluster` leaves no process behind: stopped by a signal, every child exits; killed hard, its children see
// their parent gone and stop themselves. Pids are checked in /proc; the test timeout bounds a process that never exits.

const ROOT = join(import.meta.dir, "..");

describe.skipIf(!realServers)("bun run cluster", () => {
  async function startLauncher() {
    const database = await freshDatabase(realServers!.databaseUrl);
    const busPrefix = uniqueName("cluster_stop");
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      NATS_URL: realServers!.natsUrl,
      DATABASE_URL: database.url,
      HATCH_SECRET: TEST_SECRET,
      BUS_PREFIX: busPrefix,
      PORT: String(freePort()),
      APP_PORT: String(freePort()),
      BLOB_DIR: testBlobDir(),
      LOG_LEVEL: "info",
    };
    delete env.SHUTDOWN_TIMEOUT_MS;
    const launcher = Bun.spawn([process.execPath, "scripts/cluster.ts"], {
      cwd: ROOT,
      env,
      stdout: "pipe",
      stderr: "pipe",
      stdin: "ignore",
    });
    const out = collect(launcher.stdout);
    const cleanup = async () => {
      if (launcher.exitCode === null) launcher.kill("SIGKILL");
      for (const pid of children) if (isAlive(pid)) process.kill(pid, "SIGKILL");
      const bus = await createNatsBus({ url: realServers!.natsUrl, prefix: busPrefix });
      await deleteEventsStream(bus).catch(() => {});
      await bus.drain();
      await database.drop();
    };
    let children: number[] = [];
    try {
      await out.waitFor("Hatch cluster is running");
    } catch (error) {
      await cleanup();
      throw error;
    }
    children = childPids(launcher.pid);
    return { launcher, out, children, cleanup };
  }

  test("SIGTERM: every child stops by itself, the launcher exits 0, no pid is left", async () => {
    const { launcher, out, children, cleanup } = await startLauncher();
    try {
      expect(children).toHaveLength(5);
      launcher.kill("SIGTERM");
      expect(await launcher.exited).toBe(EXIT_CODES.clean);
      expect(children.filter(isAlive)).toEqual([]);
      await out.ended;
      // Each of the five wrote its own "stopped" (none was killed at the launcher's margin).
      const stopped = logLines(out, "stopped").map((line) => line.service);
      expect(stopped.sort()).toEqual(["apps", "billing", "cluster", "domains", "gateway", "orgs"]);
    } finally {
      await cleanup();
    }
  }, 120_000);

  test("the launcher killed hard (SIGKILL): its children notice and stop themselves", async () => {
    const { launcher, out, children, cleanup } = await startLauncher();
    try {
      expect(children).toHaveLength(5);
      launcher.kill("SIGKILL");
      await launcher.exited;
      await allGone(children);
      await out.ended; // the children held the launcher's stdout until they exited
      const reasons = logLines(out, "shutting down").map((line) => line.reason);
      expect(reasons).toEqual(Array(5).fill("parent process exited"));
    } finally {
      await cleanup();
    }
  }, 120_000);
});
