import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import type { PGlite } from "@electric-sql/pglite";
import {
  createLogger,
  openEmbeddedPostgres,
  openServiceDatabase,
  type Database,
  type DatabaseHandle,
} from "@hatch/platform";
import { eq, sql } from "drizzle-orm";
import { jobs } from "../src/db/schema.ts";
import { cancelJob, enqueueJob, JobQueue, type JobKind, type JobQueueOptions, type JobRow } from "../src/jobs/queue.ts";
import { DOMAINS_MIGRATIONS } from "../src/service.ts";
import { eventually } from "../../../test/support/eventually.ts";
import { freshDatabase } from "../../../test/support/servers.ts";

// The domains job queue (services/domains/src/jobs/queue.ts) on the embedded database and, when TEST_DATABASE_URL is
// set, on a real Postgres server (a fresh database per run). Queues are stepped with runDue() where a test is about one
// run, and started where it is about copies racing; waits are on conditions, never on durations.

type Tx = Parameters<Parameters<Database["transaction"]>[0]>[0];
const logger = createLogger({ level: "silent" });
const DB_MODES = ["pglite", ...(process.env.TEST_DATABASE_URL ? ["postgres"] : [])] as const;

for (const mode of DB_MODES) {
  describe(`domains job queue (${mode})`, () => {
    let db: Database;
    /** A second connection pool on the same database (Postgres): a second copy's own connections. */
    let otherDb: Database;
    const handles: DatabaseHandle[] = [];
    let pglite: PGlite | undefined;
    let dropDatabase: (() => Promise<void>) | undefined;
    const queues: JobQueue[] = [];

    beforeAll(async () => {
      const options = { schema: "domains", migrationsFolder: DOMAINS_MIGRATIONS };
      if (mode === "pglite") {
        pglite = await openEmbeddedPostgres();
        handles.push(await openServiceDatabase({ kind: "pglite", client: pglite }, options));
        db = otherDb = handles[0]!.db;
      } else {
        const database = await freshDatabase(process.env.TEST_DATABASE_URL!);
        dropDatabase = database.drop;
        handles.push(await openServiceDatabase({ kind: "postgres", url: database.url, maxConnections: 4 }, options));
        handles.push(await openServiceDatabase({ kind: "postgres", url: database.url, maxConnections: 4 }, options));
        db = handles[0]!.db;
        otherDb = handles[1]!.db;
      }
      await db.execute(sql`create schema if not exists jobs_test`);
      await db.execute(sql`create table if not exists jobs_test.effects (job_key text not null, note text not null)`);
    }, 60_000);

    afterAll(async () => {
      await Promise.all(queues.map((queue) => queue.stop()));
      for (const handle of handles) await handle.close();
      await pglite?.close();
      await dropDatabase?.();
    });

    beforeEach(async () => {
      await Promise.all(queues.splice(0).map((queue) => queue.stop()));
      await db.execute(sql`delete from domains.jobs`);
      await db.execute(sql`delete from jobs_test.effects`);
    });

    function queue(
      kinds: Record<string, JobKind>,
      options: Partial<JobQueueOptions> = {},
      on: Database = db,
    ): JobQueue {
      const made = new JobQueue({ db: on, logger, kinds, pollMs: 10, leaseMs: 60_000, ...options });
      queues.push(made);
      return made;
    }

    /** A change of a job's run, committed (or not) with its completion. */
    function effect(key: string, note: string) {
      return async (tx: Tx) => {
        await tx.execute(sql`insert into jobs_test.effects (job_key, note) values (${key}, ${note})`);
      };
    }

    async function effects(): Promise<Array<{ job_key: string; note: string }>> {
      const result = await db.execute(sql`select job_key, note from jobs_test.effects order by job_key, note`);
      return rowsOf(result) as Array<{ job_key: string; note: string }>;
    }

    async function jobRows(kind?: string): Promise<JobRow[]> {
      return kind ? db.select().from(jobs).where(eq(jobs.kind, kind)) : db.select().from(jobs);
    }

    async function only(kind: string): Promise<JobRow> {
      const rows = await jobRows(kind);
      expect(rows).toHaveLength(1);
      return rows[0]!;
    }

    /** The job's next run, in ms after its last change (both the database's clock). */
    async function delayOf(kind: string): Promise<number> {
      const result = await db.execute(
        sql`select extract(epoch from run_at - updated_at) * 1000 as ms from domains.jobs where kind = ${kind}`,
      );
      return Number((rowsOf(result)[0] as { ms: number | string }).ms);
    }

    async function makeDue(kind: string): Promise<void> {
      await db.update(jobs).set({ runAt: sql`now() - interval '1 second'` }).where(eq(jobs.kind, kind));
    }

    test("enqueueing an open job again keeps one row with the earlier run time and the new payload; a done job's key is free again", async () => {
      await db.transaction((tx) =>
        enqueueJob(tx, { kind: "t.dedupe", key: "a.example.com", payload: { n: 1 }, inMs: 3_600_000 }),
      );
      const first = await only("t.dedupe");
      await db.transaction((tx) =>
        enqueueJob(tx, { kind: "t.dedupe", key: "a.example.com", payload: { n: 2 }, inMs: 60_000 }),
      );
      const earlier = await only("t.dedupe");
      expect(earlier.id).toBe(first.id);
      expect(earlier.runAt.getTime()).toBeLessThan(first.runAt.getTime());
      expect(earlier.payload).toEqual({ n: 2 });
      // A later run time does not push it back.
      await db.transaction((tx) =>
        enqueueJob(tx, { kind: "t.dedupe", key: "a.example.com", payload: { n: 3 }, inMs: 7_200_000 }),
      );
      const kept = await only("t.dedupe");
      expect(kept.runAt.getTime()).toBe(earlier.runAt.getTime());
      expect(kept.payload).toEqual({ n: 3 });
      // Another key, or the same key in another kind, is another job.
      await db.transaction(async (tx) => {
        await enqueueJob(tx, { kind: "t.dedupe", key: "b.example.com" });
        await enqueueJob(tx, { kind: "t.other", key: "a.example.com" });
      });
      expect(await jobRows("t.dedupe")).toHaveLength(2);
      expect(await jobRows("t.other")).toHaveLength(1);

      // Due now and run: done. Enqueueing the same key again opens a new job beside the done one.
      await db.transaction((tx) => enqueueJob(tx, { kind: "t.dedupe", key: "a.example.com", payload: { n: 4 } }));
      const seen: unknown[] = [];
      const q = queue({
        "t.dedupe": { run: async (job) => (seen.push(job.payload), {}) },
        "t.other": { run: async () => ({}) },
      });
      while ((await q.runDue()) > 0);
      expect(seen).toContainEqual({ n: 4 });
      await db.transaction((tx) => enqueueJob(tx, { kind: "t.dedupe", key: "a.example.com", payload: { n: 5 } }));
      const again = (await jobRows("t.dedupe")).filter((row) => row.key === "a.example.com");
      expect(again).toHaveLength(2);
      expect(again.filter((row) => row.doneAt === null).map((row) => row.payload)).toEqual([{ n: 5 }]);
    });

    test("enqueueing a job while it runs is not lost: the run commits, then the job runs again with the new payload", async () => {
      await db.transaction((tx) => enqueueJob(tx, { kind: "t.again", key: "shop.example.com", payload: { n: 1 } }));
      const seen: unknown[] = [];
      let started = false;
      let finish!: () => void;
      const gate = new Promise<void>((resolve) => (finish = resolve));
      const q = queue({
        "t.again": {
          run: async (job) => {
            seen.push(job.payload);
            if (!started) (started = true), await gate;
            return { apply: effect(job.key, `n=${job.payload.n}`) };
          },
        },
      });
      const first = q.runDue();
      await eventually(() => started, "the first run to start");
      // A tool asks for a check again (new records were added) while the first check is still out.
      await db.transaction((tx) => enqueueJob(tx, { kind: "t.again", key: "shop.example.com", payload: { n: 2 } }));
      finish();
      await first;
      const open = await only("t.again");
      expect(open).toMatchObject({ doneAt: null, runs: 1, payload: { n: 2 }, lockedBy: null });
      expect(await q.runDue()).toBe(1);
      expect(seen).toEqual([{ n: 1 }, { n: 2 }]);
      expect((await effects()).map((e) => e.note)).toEqual(["n=1", "n=2"]);
      expect((await only("t.again")).doneAt).not.toBeNull();

      // A recurring run asked for again keeps the request (due at once, its payload) over the run's own next time.
      await db.transaction((tx) => enqueueJob(tx, { kind: "t.again2", key: "k", payload: { n: 1 } }));
      let go!: () => void;
      const held = new Promise<void>((resolve) => (go = resolve));
      let running = false;
      const r = queue({
        "t.again2": { run: async () => ((running = true), await held, { againInMs: 3_600_000, payload: { n: 99 } }) },
      });
      const run = r.runDue();
      await eventually(() => running, "the recurring run to start");
      await db.transaction((tx) => enqueueJob(tx, { kind: "t.again2", key: "k", payload: { n: 3 } }));
      go();
      await run;
      const recurring = await only("t.again2");
      expect(recurring).toMatchObject({ doneAt: null, runs: 1, payload: { n: 3 } });
      expect(recurring.runAt.getTime()).toBeLessThan(Date.now() + 60_000);
    });

    test("a run's apply commits together with the job's completion, and not at all when it fails", async () => {
      await db.transaction(async (tx) => {
        await enqueueJob(tx, { kind: "t.apply", key: "ok" });
        await enqueueJob(tx, { kind: "t.apply", key: "broken" });
      });
      const q = queue({
        "t.apply": {
          run: async (job) => ({
            apply: async (tx) => {
              await effect(job.key, "applied")(tx);
              if (job.key === "broken") throw new Error("the stage row was gone");
            },
          }),
        },
      });
      expect(await q.runDue()).toBe(2);
      expect(await effects()).toEqual([{ job_key: "ok", note: "applied" }]);
      const rows = await jobRows("t.apply");
      const ok = rows.find((row) => row.key === "ok")!;
      expect(ok.doneAt).not.toBeNull();
      expect(ok.runs).toBe(1);
      expect(ok.lockedBy).toBeNull();
      const broken = rows.find((row) => row.key === "broken")!;
      expect(broken.doneAt).toBeNull();
      expect(broken.runs).toBe(0);
      expect(broken.attempts).toBe(1);
      expect(broken.lastError).toBe("the stage row was gone");
      expect(broken.lockedBy).toBeNull();
    });

    test("a throwing run is retried with a doubling backoff, then given up after maxAttempts (giveUp commits with it)", async () => {
      await db.transaction((tx) => enqueueJob(tx, { kind: "t.fail", key: "example.com" }));
      let calls = 0;
      const q = queue(
        {
          "t.fail": {
            maxAttempts: 3,
            run: async () => {
              calls++;
              throw new Error(`registrar unavailable (${calls})`);
            },
            giveUp: async (job, error, tx) => effect(job.key, `gave up: ${error}`)(tx),
          },
        },
        { backoffMs: 60_000, maxBackoffMs: 3_600_000 },
      );
      expect(await q.runDue()).toBe(1);
      let row = await only("t.fail");
      expect(row).toMatchObject({ attempts: 1, lastError: "registrar unavailable (1)", doneAt: null, lockedBy: null });
      const firstDelay = await delayOf("t.fail");
      expect(firstDelay).toBeGreaterThanOrEqual(60_000 * 0.75 - 1);
      expect(firstDelay).toBeLessThanOrEqual(60_000 * 1.25 + 1);
      // Not due yet: nothing runs.
      expect(await q.runDue()).toBe(0);
      expect(calls).toBe(1);

      await makeDue("t.fail");
      expect(await q.runDue()).toBe(1);
      row = await only("t.fail");
      expect(row).toMatchObject({ attempts: 2, lastError: "registrar unavailable (2)", doneAt: null });
      const secondDelay = await delayOf("t.fail");
      expect(secondDelay).toBeGreaterThanOrEqual(120_000 * 0.75 - 1);
      expect(secondDelay).toBeGreaterThan(firstDelay);
      expect(await effects()).toEqual([]);

      await makeDue("t.fail");
      expect(await q.runDue()).toBe(1);
      row = await only("t.fail");
      expect(row).toMatchObject({ attempts: 3, lastError: "registrar unavailable (3)", lockedBy: null });
      expect(row.doneAt).not.toBeNull();
      expect(await effects()).toEqual([{ job_key: "example.com", note: "gave up: registrar unavailable (3)" }]);
      await makeDue("t.fail");
      expect(await q.runDue()).toBe(0);
      expect(calls).toBe(3);
    });

    test("a job without maxAttempts keeps retrying; a success resets its attempts", async () => {
      await db.transaction((tx) => enqueueJob(tx, { kind: "t.flaky", key: "k" }));
      let calls = 0;
      const q = queue(
        { "t.flaky": { run: async () => (++calls < 4 ? Promise.reject(new Error("try again")) : {}) } },
        { backoffMs: 1_000, maxBackoffMs: 2_000 },
      );
      for (let i = 0; i < 3; i++) {
        expect(await q.runDue()).toBe(1);
        expect((await only("t.flaky")).attempts).toBe(i + 1);
        expect(await delayOf("t.flaky")).toBeLessThanOrEqual(2_000 * 1.25 + 1);
        await makeDue("t.flaky");
      }
      expect(await q.runDue()).toBe(1);
      expect(await only("t.flaky")).toMatchObject({ attempts: 0, lastError: null, runs: 1 });
    });

    test("againInMs keeps the job open for another run, with the new payload; each run's apply commits once", async () => {
      await db.transaction((tx) =>
        enqueueJob(tx, { kind: "t.recheck", key: "shop.example.com", payload: { round: 0 } }),
      );
      const q = queue({
        "t.recheck": {
          run: async (job) => {
            const round = Number(job.payload.round) + 1;
            return {
              apply: effect(job.key, `round ${round}`),
              ...(round < 3 ? { againInMs: 90_000, payload: { round } } : {}),
            };
          },
        },
      });
      expect(await q.runDue()).toBe(1);
      let row = await only("t.recheck");
      expect(row).toMatchObject({ runs: 1, doneAt: null, payload: { round: 1 }, lockedBy: null });
      expect(Math.round(await delayOf("t.recheck"))).toBe(90_000);
      expect(await q.runDue()).toBe(0);

      await makeDue("t.recheck");
      expect(await q.runDue()).toBe(1);
      expect(await only("t.recheck")).toMatchObject({ runs: 2, doneAt: null, payload: { round: 2 } });
      await makeDue("t.recheck");
      expect(await q.runDue()).toBe(1);
      row = await only("t.recheck");
      expect(row.runs).toBe(3);
      expect(row.doneAt).not.toBeNull();
      expect((await effects()).map((e) => e.note)).toEqual(["round 1", "round 2", "round 3"]);
    });

    test("cancelJob ends an open job: it never runs, and its key can be queued again", async () => {
      await db.transaction(async (tx) => {
        await enqueueJob(tx, { kind: "t.cancel", key: "gone.example.com" });
        await enqueueJob(tx, { kind: "t.cancel", key: "kept.example.com" });
      });
      await db.transaction((tx) => cancelJob(tx, "t.cancel", "gone.example.com"));
      // Cancelling what is not open changes nothing.
      await db.transaction((tx) => cancelJob(tx, "t.cancel", "never.example.com"));
      const ran: string[] = [];
      const q = queue({ "t.cancel": { run: async (job) => (ran.push(job.key), {}) } });
      expect(await q.runDue()).toBe(1);
      expect(ran).toEqual(["kept.example.com"]);
      const gone = (await jobRows("t.cancel")).find((row) => row.key === "gone.example.com")!;
      expect(gone.lastError).toBe("cancelled");
      expect(gone.doneAt).not.toBeNull();
      expect(gone.runs).toBe(0);

      await db.transaction((tx) => enqueueJob(tx, { kind: "t.cancel", key: "gone.example.com" }));
      expect(await q.runDue()).toBe(1);
      expect(ran).toEqual(["kept.example.com", "gone.example.com"]);
    });

    test("a job of a kind this copy does not know is retried later, not lost", async () => {
      await db.transaction((tx) => enqueueJob(tx, { kind: "t.unknown", key: "k" }));
      expect(await queue({}).runDue()).toBe(1);
      expect(await only("t.unknown")).toMatchObject({
        attempts: 1,
        lastError: "no handler for job kind t.unknown",
        doneAt: null,
      });
    });

    test("stop() aborts the runs in flight and releases their jobs at once: another copy takes them without waiting for the lease", async () => {
      await db.transaction((tx) => enqueueJob(tx, { kind: "t.stop", key: "held" }));
      let started = false;
      const a = queue({
        "t.stop": {
          // Waits until aborted, then still hands back a change: a stopped copy must not commit it.
          run: async (job, signal) => {
            started = true;
            await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve()));
            return { apply: effect(job.key, "stopped copy") };
          },
        },
      });
      a.start();
      await eventually(() => started, "copy A to start the job");
      const held = await only("t.stop");
      expect(held.lockedBy?.startsWith(`${a.copyId}:`)).toBe(true);
      expect(held.lockedUntil!.getTime()).toBeGreaterThan(Date.now() + 30_000);

      await a.stop();
      const released = await only("t.stop");
      expect(released).toMatchObject({ lockedBy: null, lockedUntil: null, doneAt: null, attempts: 0, runs: 0 });

      const b = queue({ "t.stop": { run: async (job) => ({ apply: effect(job.key, "copy B") }) } }, {}, otherDb);
      expect(await b.runDue()).toBe(1);
      expect(await effects()).toEqual([{ job_key: "held", note: "copy B" }]);
      expect((await only("t.stop")).doneAt).not.toBeNull();
    });

    test("the fence: a copy that stalled past its lease commits nothing once another copy has taken the job", async () => {
      await db.transaction((tx) => enqueueJob(tx, { kind: "t.fence", key: "stalled" }));
      let started = false;
      let resume!: () => void;
      const stalled = new Promise<void>((resolve) => (resume = resolve));
      // A long lease: its renewal does not come round during the test, as if the copy were frozen.
      const a = queue({
        "t.fence": { run: async (job) => ((started = true), await stalled, { apply: effect(job.key, "stale copy") }) },
      });
      const aRun = a.runDue();
      await eventually(() => started, "copy A to start the job");
      // The lease runs out while A is stalled (moved back rather than waited for).
      await db.update(jobs).set({ lockedUntil: sql`now() - interval '1 second'` }).where(eq(jobs.kind, "t.fence"));

      const b = queue({ "t.fence": { run: async (job) => ({ apply: effect(job.key, "copy B") }) } }, {}, otherDb);
      expect(await b.runDue()).toBe(1);
      resume();
      await aRun;
      expect(await effects()).toEqual([{ job_key: "stalled", note: "copy B" }]);
      expect(await only("t.fence")).toMatchObject({ runs: 1, attempts: 0, lastError: null, lockedBy: null });
    });

    test("the fence with a tiny lease: the handler outlives it, another copy claims and completes the job, the first commits nothing", async () => {
      await db.transaction((tx) => enqueueJob(tx, { kind: "t.tiny", key: "slow" }));
      let aStarted = false;
      // A's lease (50 ms) is shorter than its renewal period (100 ms at least), so it lapses while the handler waits.
      const a = queue(
        {
          "t.tiny": {
            run: async (job) => {
              aStarted = true;
              await eventually(
                async () => (await db.select().from(jobs).where(eq(jobs.id, job.id)))[0]?.doneAt != null,
                "copy B to complete the job",
                30_000,
              );
              return { apply: effect(job.key, "copy A") };
            },
          },
        },
        { leaseMs: 50 },
      );
      const aRun = a.runDue();
      await eventually(() => aStarted, "copy A to start the job");
      const b = queue(
        { "t.tiny": { run: async (job) => ({ apply: effect(job.key, "copy B") }) } },
        { pollMs: 10 },
        otherDb,
      );
      b.start();
      await aRun;
      expect(await effects()).toEqual([{ job_key: "slow", note: "copy B" }]);
      const row = await only("t.tiny");
      expect(row.runs).toBe(1);
      expect(row.doneAt).not.toBeNull();
      expect(row.lockedBy).toBeNull();
    });

    test("two started copies share a load: every job runs and commits exactly once", async () => {
      const count = 60;
      await db.transaction(async (tx) => {
        for (let i = 0; i < count; i++) await enqueueJob(tx, { kind: "t.share", key: `job-${i}` });
      });
      const kind = (copy: string): Record<string, JobKind> => ({
        "t.share": { run: async (job) => (await Bun.sleep(2), { apply: effect(job.key, copy) }) },
      });
      const a = queue(kind("a"), { pollMs: 10 });
      const b = queue(kind("b"), { pollMs: 10 }, otherDb);
      a.start();
      b.start();
      await eventually(
        async () => (await jobRows("t.share")).every((row) => row.doneAt !== null),
        "every job to be done",
        30_000,
      );
      const done = await effects();
      expect(done).toHaveLength(count);
      expect(new Set(done.map((e) => e.job_key)).size).toBe(count);
      expect((await jobRows("t.share")).every((row) => row.runs === 1)).toBe(true);
    });
  });
}

/** drizzle's execute answers rows directly (postgres-js) or as `{ rows }` (PGlite). */
function rowsOf(result: unknown): unknown[] {
  return Array.isArray(result) ? result : (result as { rows: unknown[] }).rows;
}
