import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import {
  createNatsBus,
  decodeJson,
  deleteEventsStream,
  encodeJson,
  openServiceDatabase,
  type DatabaseHandle,
  type NatsBus,
} from "@hatch/platform";
import type { Subprocess } from "bun";
import { sql } from "drizzle-orm";
import { hostnames } from "../services/domains/src/db/schema.ts";
import { enqueueJob } from "../services/domains/src/jobs/queue.ts";
import { DOMAINS_MIGRATIONS } from "../services/domains/src/service.ts";
import { eventually } from "./support/eventually.ts";
import { TEST_SECRET } from "./support/hatch.ts";
import { collect, logLines, type Output } from "./support/processes.ts";
import { freshDatabase, realServers, uniqueName } from "./support/servers.ts";

// The domains service scaled out: two copies as separate processes (test/support/domains-copy.ts, which starts the
// service as its main.ts does and adds a counting job kind) on real NATS and Postgres. Both answer calls (one queue
// group), every job commits exactly once, and a copy killed with SIGKILL while it holds claimed jobs loses and doubles
// nothing: its leases run out and the other copy finishes its jobs.

const ROOT = join(import.meta.dir, "..");
const LEASE_MS = 1_000;

if (!realServers) {
  process.stderr.write(
    "domains-scale.e2e: skipped: the two-copies test needs real servers; set TEST_DATABASE_URL and TEST_NATS_URL.\n",
  );
}

interface Copy {
  process: Subprocess<"ignore", "pipe", "pipe">;
  output: Output;
  errors: Output;
  id: string;
}

describe.skipIf(!realServers)("domains service: two copies on real NATS and Postgres", () => {
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let handle: DatabaseHandle;
  let bus: NatsBus;
  const busPrefix = uniqueName("scale");
  const copies: Copy[] = [];

  async function startCopy(): Promise<Copy> {
    const child = Bun.spawn(["bun", join(ROOT, "test/support/domains-copy.ts")], {
      cwd: join(ROOT, "services/domains"),
      env: {
        PATH: process.env.PATH ?? "",
        NATS_URL: realServers!.natsUrl,
        DATABASE_URL: database.url,
        BUS_PREFIX: busPrefix,
        HATCH_SECRET: TEST_SECRET,
        LOG_LEVEL: "info",
        NODE_ENV: "test",
        DB_POOL_SIZE: "6",
        DOMAINS_JOB_POLL_MS: "20",
        DOMAINS_JOB_LEASE_MS: String(LEASE_MS),
        // The copies die with the test run, whatever happens to it.
        HATCH_PARENT_PID: String(process.pid),
      },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const output = collect(child.stdout);
    const errors = collect(child.stderr);
    await Promise.race([
      output.waitFor('"msg":"domains copy started"'),
      child.exited.then((code) => {
        throw new Error(`a domains copy exited (${code}) before it started:\n${output.text}\n${errors.text}`);
      }),
    ]);
    const id = String(logLines(output, "domains copy started")[0]!.copy);
    const copy = { process: child, output, errors, id };
    copies.push(copy);
    return copy;
  }

  async function rpc(method: string, input: unknown): Promise<Record<string, unknown>> {
    const reply = decodeJson(
      (await bus.request(`rpc.domains.${method}`, encodeJson({ input }), { timeoutMs: 10_000 })).data,
    ) as {
      ok: boolean;
      result?: Record<string, unknown>;
      error?: unknown;
    };
    expect(reply.ok).toBe(true);
    return reply.result!;
  }

  async function runsByKey(): Promise<Map<string, string[]>> {
    const rows = (await handle.db.execute(sql`select job_key, claim from scale_test.runs`)) as unknown as Array<{
      job_key: string;
      claim: string;
    }>;
    const byKey = new Map<string, string[]>();
    for (const row of rows) byKey.set(row.job_key, [...(byKey.get(row.job_key) ?? []), row.claim]);
    return byKey;
  }

  async function openJobs(prefix: string): Promise<Array<{ key: string; locked_by: string | null }>> {
    return (await handle.db.execute(
      sql`select key, locked_by from domains.jobs where kind = 'test.count' and key like ${`${prefix}%`} and done_at is null`,
    )) as unknown as Array<{ key: string; locked_by: string | null }>;
  }

  async function load(prefix: string, count: number, ms: number): Promise<string[]> {
    const keys = Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(3, "0")}`);
    await handle.db.transaction(async (tx) => {
      for (const key of keys) await enqueueJob(tx, { kind: "test.count", key, payload: { ms } });
    });
    return keys;
  }

  /** Every key has exactly one committed run, and its job is done after one run with no failure. */
  async function expectExactlyOnce(prefix: string, keys: string[]): Promise<Map<string, string[]>> {
    const byKey = await runsByKey();
    const wrong = keys
      .filter((key) => byKey.get(key)?.length !== 1)
      .map((key) => `${key}: ${byKey.get(key)?.length ?? 0} runs`);
    expect(wrong).toEqual([]);
    const jobs = (await handle.db.execute(
      sql`select key, runs, attempts, done_at from domains.jobs where kind = 'test.count' and key like ${`${prefix}%`}`,
    )) as unknown as Array<{ key: string; runs: number; attempts: number; done_at: unknown }>;
    expect(jobs).toHaveLength(keys.length);
    expect(jobs.filter((job) => job.runs !== 1 || job.attempts !== 0 || job.done_at === null)).toEqual([]);
    return byKey;
  }

  beforeAll(async () => {
    database = await freshDatabase(realServers!.databaseUrl);
    // The copies apply the migrations (one at a time, under the advisory lock); the test table is the test's own.
    await startCopy();
    await startCopy();
    handle = await openServiceDatabase(
      { kind: "postgres", url: database.url, maxConnections: 4 },
      { schema: "domains", migrationsFolder: DOMAINS_MIGRATIONS },
    );
    await handle.db.execute(sql`create schema scale_test`);
    await handle.db.execute(
      sql`create table scale_test.runs (job_key text not null, claim text not null, at timestamptz not null default now())`,
    );
    bus = await createNatsBus({ url: realServers!.natsUrl, prefix: busPrefix });
  }, 120_000);

  afterAll(async () => {
    for (const copy of copies) copy.process.kill("SIGTERM");
    await Promise.all(copies.map((copy) => copy.process.exited));
    if (bus) {
      await deleteEventsStream(bus).catch(() => undefined);
      await bus.drain();
    }
    await handle?.close();
    await database?.drop();
  }, 60_000);

  test("both copies answer calls: rpc requests are shared by the queue group", async () => {
    expect(copies[0]!.id).not.toBe(copies[1]!.id);
    const answered = new Map<string, number>();
    for (let i = 0; i < 40; i++) {
      const health = await rpc("health", {});
      expect(health).toMatchObject({ service: "domains" });
      answered.set(String(health.copy), (answered.get(String(health.copy)) ?? 0) + 1);
    }
    // Queue group delivery is random per request: 40 requests all to one of two copies has odds 2^-39.
    expect([...answered.keys()].sort()).toEqual(copies.map((copy) => copy.id).sort());

    // host.resolve answers the same from either copy (they share the database).
    await handle.db.insert(hostnames).values({
      hostname: "shop.example.com",
      kind: "custom",
      accountId: "acct_scale",
      appId: "app_scale",
      address: "scale-shop",
      createdBy: "usr_scale",
      token: "t".repeat(32),
      verifiedAt: new Date(),
    });
    const resolved = await Promise.all(
      Array.from({ length: 40 }, () => rpc("host.resolve", { hostname: "shop.example.com" })),
    );
    expect(resolved.every((r) => r.address === "scale-shop" && r.accountId === "acct_scale")).toBe(true);
    const unknown = await rpc("host.resolve", { hostname: "other.example.com" });
    expect(unknown).toEqual({ address: null, accountId: null });
  });

  test("200 jobs across both copies: each commits exactly once, and both copies take a share", async () => {
    const keys = await load("steady-", 200, 5);
    await eventually(async () => (await openJobs("steady-")).length === 0, "every job to be done", 60_000);
    const byKey = await expectExactlyOnce("steady-", keys);
    const copiesThatRan = new Set([...byKey.values()].flat().map((claim) => claim.split(":")[0]));
    expect([...copiesThatRan].sort()).toEqual(copies.map((copy) => copy.id).sort());
  }, 90_000);

  test("a copy killed with SIGKILL while it holds claimed jobs: the other finishes them, nothing lost, nothing doubled", async () => {
    const [victim, survivor] = copies as [Copy, Copy];
    const keys = await load("kill-", 200, 40);
    await eventually(
      async () => (await openJobs("kill-")).some((job) => job.locked_by?.startsWith(`${victim.id}:`)),
      "the victim to hold claimed jobs",
      30_000,
    );
    victim.process.kill("SIGKILL");
    await victim.process.exited;
    expect(victim.process.signalCode).toBe("SIGKILL");
    // What the dead copy still held: jobs claimed and not completed, whose leases will run out.
    const orphaned = (await openJobs("kill-"))
      .filter((job) => job.locked_by?.startsWith(`${victim.id}:`))
      .map((job) => job.key);
    expect(orphaned.length).toBeGreaterThan(0);

    await eventually(
      async () => (await openJobs("kill-")).length === 0,
      "every job to be done by the surviving copy",
      90_000,
    );
    const byKey = await expectExactlyOnce("kill-", keys);
    for (const key of orphaned) expect(byKey.get(key)![0]!.startsWith(`${survivor.id}:`)).toBe(true);
    // The survivor kept answering throughout.
    expect(await rpc("health", {})).toMatchObject({ copy: survivor.id });
  }, 120_000);
});
