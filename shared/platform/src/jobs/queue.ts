import { randomId } from "@hatch/contracts";
import { and, asc, eq, getTableColumns, gt, inArray, isNull, lt, lte, or, sql } from "drizzle-orm";
import { index, integer, jsonb, text, timestamp, uniqueIndex, type PgSchema } from "drizzle-orm/pg-core";
import type { Database } from "../db.ts";
import type { Logger } from "../logger.ts";

// Work shared by every copy of a service (the domains service's stages). A job is a row; a copy claims due rows with
// `FOR UPDATE SKIP LOCKED` under a lease, runs the handler outside any transaction (DNS, TLS and registrar calls take
// seconds), then commits the handler's changes together with the job's completion in one transaction fenced by the
// lease: a copy whose lease ran out (it stalled, or died and came back) commits nothing, so a job's changes land once.
// Handlers that call the outside world must be safe to repeat (the registrar adapter is idempotent per domain).

/**
 * A service's job table, in its own schema: one row per job (`kind` + `key` unique while not done, so a job is never
 * queued twice). Copies claim due rows with `FOR UPDATE SKIP LOCKED` and hold them for a lease (`locked_by`,
 * `locked_until`); a copy that dies leaves its rows to be claimed again once the lease runs out.
 */
export function jobsTable(schema: PgSchema) {
  return schema.table(
    "jobs",
    {
      id: text("id").primaryKey(),
      kind: text("kind").notNull(),
      key: text("key").notNull(),
      payload: jsonb("payload").$type<Record<string, unknown>>().notNull().default({}),
      runAt: timestamp("run_at", { withTimezone: true }).notNull().defaultNow(),
      /** Failed runs since the last success (backoff grows with it). */
      attempts: integer("attempts").notNull().default(0),
      /** Runs that completed (a recurring job counts each). */
      runs: integer("runs").notNull().default(0),
      lockedBy: text("locked_by"),
      lockedUntil: timestamp("locked_until", { withTimezone: true }),
      lastError: text("last_error"),
      doneAt: timestamp("done_at", { withTimezone: true }),
      createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
      updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
    },
    (t) => [
      uniqueIndex("jobs_open_key").on(t.kind, t.key).where(sql`${t.doneAt} IS NULL`),
      index("jobs_due").on(t.runAt).where(sql`${t.doneAt} IS NULL`),
    ],
  );
}
export type JobsTable = ReturnType<typeof jobsTable>;
export type JobRow = JobsTable["$inferSelect"];
type Tx = Parameters<Parameters<Database["transaction"]>[0]>[0];

export interface JobOutcome {
  /** Database changes of this run, committed with the job's completion (or not at all). */
  apply?: (tx: Tx) => Promise<void>;
  /** Run again in this many milliseconds (a recurring check); left out, the job is done. */
  againInMs?: number;
  /** With againInMs: replaces the payload for the next run. */
  payload?: Record<string, unknown>;
  /** Runs once `apply` committed (a broadcast about the change); never when the run commits nothing. */
  afterCommit?: () => void;
}

export interface JobKind {
  run(job: JobRow, signal: AbortSignal): Promise<JobOutcome>;
  /** Failed runs after which the job stops being retried (default: never stops; backoff is capped). */
  maxAttempts?: number;
  /** Called, in the completing transaction, when maxAttempts is reached (record the problem, refund, ...). */
  giveUp?(job: JobRow, error: string, tx: Tx): Promise<void>;
}

export interface JobQueueOptions {
  db: Database;
  /** The service's job table (jobsTable(its schema)). */
  table: JobsTable;
  logger: Logger;
  kinds: Record<string, JobKind>;
  /** This copy's name in `locked_by` (a random id by default). */
  copyId?: string;
  /** How often an idle copy looks for due jobs (default 1 s). */
  pollMs?: number;
  /** How long a claim holds a job before another copy may take it (default 30 s; renewed while it runs). */
  leaseMs?: number;
  /** Jobs one copy runs at once (default 4). */
  concurrency?: number;
  /** First retry delay; doubles per failed run up to maxBackoffMs (defaults 2 s and 1 h). */
  backoffMs?: number;
  maxBackoffMs?: number;
}

export interface NewJob {
  kind: string;
  /** Identifies the job within its kind, e.g. a hostname: a second enqueue of an open job moves it earlier instead. */
  key: string;
  payload?: Record<string, unknown>;
  /** Milliseconds from now (default 0: due at once). */
  inMs?: number;
}

/**
 * Queues a job inside the caller's transaction (the one that makes the change the job follows up). An open job of the
 * same kind and key is kept, with the earlier of the two run times and the new payload. If that job is running now,
 * its run still commits, and the job then stays open to run again at once with the new payload.
 */
export async function enqueueJob(tx: Pick<Database, "insert">, jobs: JobsTable, job: NewJob): Promise<void> {
  const runAt = sql`now() + ${job.inMs ?? 0} * interval '1 millisecond'`;
  await tx
    .insert(jobs)
    .values({ id: `job_${randomId(12)}`, kind: job.kind, key: job.key, payload: job.payload ?? {}, runAt })
    .onConflictDoUpdate({
      target: [jobs.kind, jobs.key],
      targetWhere: sql`${jobs.doneAt} IS NULL`,
      // clock_timestamp(), not now(): taken after the row lock, so it differs from the stamp of a claim that committed
      // before; a run in flight sees that the job was asked for again (JobQueue.run).
      set: {
        runAt: sql`LEAST(${jobs.runAt}, excluded.run_at)`,
        payload: sql`excluded.payload`,
        updatedAt: sql`clock_timestamp()`,
      },
    });
}

/** Ends an open job (a hostname disconnected: its checks stop), inside the caller's transaction. */
export async function cancelJob(
  tx: Pick<Database, "update">,
  jobs: JobsTable,
  kind: string,
  key: string,
): Promise<void> {
  await tx
    .update(jobs)
    .set({ doneAt: sql`now()`, lastError: "cancelled", lockedBy: null, lockedUntil: null, updatedAt: sql`now()` })
    .where(and(eq(jobs.kind, kind), eq(jobs.key, key), sql`${jobs.doneAt} IS NULL`));
}

class LeaseLost extends Error {}

export class JobQueue {
  readonly copyId: string;
  private readonly db: Database;
  private readonly jobs: JobsTable;
  private readonly log: Logger;
  private readonly kinds: Record<string, JobKind>;
  private readonly pollMs: number;
  private readonly leaseMs: number;
  private readonly concurrency: number;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly running = new Map<string, { claim: string; abort: AbortController; done: Promise<void> }>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private ticking: Promise<void> | null = null;
  private stopped = true;

  constructor(options: JobQueueOptions) {
    this.db = options.db;
    this.jobs = options.table;
    this.log = options.logger.child({ component: "jobs" });
    this.kinds = options.kinds;
    this.copyId = options.copyId ?? randomId(6);
    this.pollMs = options.pollMs ?? 1_000;
    this.leaseMs = options.leaseMs ?? 30_000;
    this.concurrency = options.concurrency ?? 4;
    this.backoffMs = options.backoffMs ?? 2_000;
    this.maxBackoffMs = options.maxBackoffMs ?? 3_600_000;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  /** Looks for due jobs now (after a change queued one), instead of at the next poll. */
  wake(): void {
    if (!this.stopped) this.schedule(0);
  }

  /**
   * Stops claiming, aborts the jobs in flight and waits for them: an aborted run commits nothing and its job is
   * released, so another copy takes it at once instead of after the lease.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.ticking;
    for (const run of this.running.values()) run.abort.abort();
    await Promise.all([...this.running.values()].map((run) => run.done));
  }

  /** Claims and runs what is due once, and waits for those runs (tests step the queue with it). */
  async runDue(): Promise<number> {
    const runs = await this.claim(this.concurrency - this.running.size);
    await Promise.all(runs);
    return runs.length;
  }

  private schedule(inMs: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.ticking) return this.schedule(this.pollMs);
      this.ticking = this.tick().finally(() => {
        this.ticking = null;
      });
    }, inMs);
  }

  private async tick(): Promise<void> {
    let claimed = 0;
    try {
      const free = this.concurrency - this.running.size;
      if (free > 0) claimed = (await this.claim(free)).length;
    } catch (error) {
      this.log.warn("could not claim jobs", { error });
    }
    // A full batch means more may be due: look again soon rather than after a whole poll.
    this.schedule(claimed > 0 && this.running.size < this.concurrency ? 0 : this.pollMs);
  }

  /** Claims up to `limit` due jobs and starts them; answers their runs. */
  private async claim(limit: number): Promise<Promise<void>[]> {
    const jobs = this.jobs;
    if (limit <= 0) return [];
    const claim = `${this.copyId}:${randomId(6)}`;
    const due = this.db
      .select({ id: jobs.id })
      .from(jobs)
      .where(
        and(
          isNull(jobs.doneAt),
          lte(jobs.runAt, sql`now()`),
          or(isNull(jobs.lockedUntil), lt(jobs.lockedUntil, sql`now()`)),
        ),
      )
      .orderBy(asc(jobs.runAt))
      .limit(limit)
      .for("update", { skipLocked: true });
    const claimed = await this.db
      .update(jobs)
      .set({
        lockedBy: claim,
        lockedUntil: sql`now() + ${this.leaseMs} * interval '1 millisecond'`,
        updatedAt: sql`now()`,
      })
      .where(inArray(jobs.id, due))
      .returning({ ...getTableColumns(jobs), stamp: sql<string>`${jobs.updatedAt}::text` });
    for (const { stamp, ...job } of claimed) {
      const abort = new AbortController();
      const done = this.run(job, claim, stamp, abort).finally(() => {
        this.running.delete(job.id);
        if (!this.stopped) this.schedule(0);
      });
      this.running.set(job.id, { claim, abort, done });
    }
    return claimed.map((job) => this.running.get(job.id)?.done ?? Promise.resolve());
  }

  /** `stamp`: the job's updated_at as the claim wrote it; a different one at completion = enqueued again meanwhile. */
  private async run(job: JobRow, claim: string, stamp: string, abort: AbortController): Promise<void> {
    const jobs = this.jobs;
    const kind = this.kinds[job.kind];
    const log = this.log.child({ job: job.id, kind: job.kind, key: job.key });
    // Renew the lease while the handler works; losing it aborts the run.
    const renew = setInterval(
      () => {
        this.db
          .update(jobs)
          .set({ lockedUntil: sql`now() + ${this.leaseMs} * interval '1 millisecond'` })
          .where(and(eq(jobs.id, job.id), eq(jobs.lockedBy, claim)))
          .returning({ id: jobs.id })
          .then((rows) => {
            if (rows.length === 0) abort.abort();
          })
          .catch(() => undefined);
      },
      Math.max(100, Math.floor(this.leaseMs / 3)),
    );
    try {
      if (!kind) throw new Error(`no handler for job kind ${job.kind}`);
      const outcome = await kind.run(job, abort.signal);
      if (abort.signal.aborted) throw new LeaseLost();
      await this.db.transaction(async (tx) => {
        // Enqueued again while this run was out: this run's changes commit, and the job stays open, due at once (the
        // earlier of the two run times: it was due when claimed) with the payload of that request.
        const again = sql`(${jobs.updatedAt} IS DISTINCT FROM ${stamp}::timestamptz)`;
        const next =
          outcome.againInMs === undefined ? null : sql`now() + ${outcome.againInMs} * interval '1 millisecond'`;
        const updated = await tx
          .update(jobs)
          .set({
            lockedBy: null,
            lockedUntil: null,
            attempts: 0,
            runs: sql`${jobs.runs} + 1`,
            lastError: null,
            updatedAt: sql`now()`,
            ...(next
              ? {
                  runAt: sql`CASE WHEN ${again} THEN ${jobs.runAt} ELSE ${next} END`,
                  ...(outcome.payload
                    ? {
                        payload: sql`CASE WHEN ${again} THEN ${jobs.payload} ELSE ${JSON.stringify(outcome.payload)}::jsonb END`,
                      }
                    : {}),
                }
              : { doneAt: sql`CASE WHEN ${again} THEN NULL ELSE now() END` }),
          })
          .where(and(eq(jobs.id, job.id), eq(jobs.lockedBy, claim), gt(jobs.lockedUntil, sql`now()`)))
          .returning({ id: jobs.id });
        if (updated.length === 0) throw new LeaseLost();
        await outcome.apply?.(tx);
      });
      outcome.afterCommit?.();
    } catch (error) {
      if (error instanceof LeaseLost || abort.signal.aborted) {
        log.info("job left to another run (lease lost or stopping)");
        await this.release(job.id, claim).catch(() => undefined);
        return;
      }
      await this.fail(job, claim, kind, error, log).catch((failure) =>
        log.warn("could not record a job failure", { error: failure }),
      );
    } finally {
      clearInterval(renew);
    }
  }

  /** Gives a claimed job back at once (stopping): due again for any copy. */
  private async release(id: string, claim: string): Promise<void> {
    const jobs = this.jobs;
    await this.db
      .update(jobs)
      .set({ lockedBy: null, lockedUntil: null, updatedAt: sql`now()` })
      .where(and(eq(jobs.id, id), eq(jobs.lockedBy, claim)));
  }

  private async fail(
    job: JobRow,
    claim: string,
    kind: JobKind | undefined,
    error: unknown,
    log: Logger,
  ): Promise<void> {
    const jobs = this.jobs;
    const message = (error instanceof Error ? error.message : String(error)).slice(0, 500);
    const attempts = job.attempts + 1;
    const givingUp = kind?.maxAttempts !== undefined && attempts >= kind.maxAttempts;
    const delay =
      Math.min(this.maxBackoffMs, this.backoffMs * 2 ** Math.min(attempts - 1, 20)) * (0.75 + Math.random() / 2);
    log.warn(givingUp ? "job failed; giving up" : "job failed; will retry", { attempts, error: message });
    await this.db.transaction(async (tx) => {
      const updated = await tx
        .update(jobs)
        .set({
          lockedBy: null,
          lockedUntil: null,
          attempts,
          lastError: message,
          updatedAt: sql`now()`,
          ...(givingUp
            ? { doneAt: sql`now()` }
            : { runAt: sql`now() + ${Math.round(delay)} * interval '1 millisecond'` }),
        })
        .where(and(eq(jobs.id, job.id), eq(jobs.lockedBy, claim)))
        .returning({ id: jobs.id });
      if (updated.length > 0 && givingUp) await kind?.giveUp?.(job, message, tx);
    });
  }
}
