import { and, asc, inArray, isNotNull, isNull, lt, sql } from "drizzle-orm";
import { bigserial, index, jsonb, text, timestamp, type PgSchema } from "drizzle-orm/pg-core";
import type { Database } from "../db.ts";
import type { Logger } from "../logger.ts";
import { createBatchLoop } from "../jobs/batch-loop.ts";
import { eventSubject, type HatchEvent, HatchEventSchema } from "@hatch/contracts";
import type { EventStream } from "./stream.ts";

/**
 * The outbox a service writes its events to, in the same transaction as the change they describe; the relay
 * publishes them afterwards. So an event exists exactly when its change committed, and none is lost when
 * the bus is down: it waits here. Each service adds this table to its own schema.
 */
export function outboxTable(schema: PgSchema) {
  return schema.table(
    "outbox",
    {
      /** Publication order. */
      seq: bigserial("seq", { mode: "number" }).primaryKey(),
      id: text("id").notNull().unique(),
      subject: text("subject").notNull(),
      event: jsonb("event").$type<HatchEvent>().notNull(),
      createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
      /** Set once the stream has stored it; sent rows are swept after a week. */
      sentAt: timestamp("sent_at", { withTimezone: true }),
    },
    (t) => [index("outbox_pending").on(t.seq).where(sql`${t.sentAt} is null`)],
  );
}
export type OutboxTable = ReturnType<typeof outboxTable>;

/** Records an event inside the caller's transaction (the one that makes the change). */
export async function writeEvent(tx: Pick<Database, "insert">, table: OutboxTable, event: HatchEvent): Promise<void> {
  const checked = HatchEventSchema.parse(event);
  await tx.insert(table).values({ id: checked.id, subject: eventSubject(checked), event: checked });
}

export interface OutboxRelay {
  /** Starts the background poll (events written outside tool calls, and retries after a failed publish). */
  start(): void;
  /** Publishes what is pending now; never throws (a failure is logged and retried by the poll). */
  flush(): Promise<void>;
  stop(): Promise<void>;
  /** Events not yet on the stream and the age of the oldest (the metrics' outbox lag). */
  lag(): Promise<{ pending: number; oldestSeconds: number }>;
}

export interface OutboxRelayOptions {
  db: Database;
  table: OutboxTable;
  stream: EventStream;
  logger: Logger;
  /** Background poll interval; default 2 s. */
  pollMs?: number;
  /** Rows per transaction; default 100. */
  batch?: number;
}

const SENT_KEPT_MS = 7 * 86_400_000;
const SWEEP_EVERY_MS = 3_600_000;

/**
 * Publishes pending outbox rows in order and marks them sent. Rows are claimed with FOR UPDATE SKIP LOCKED,
 * so several instances of a service share the work; a row published but not marked (a crash in between) is
 * published again and the stream drops the duplicate by its id.
 */
export function createOutboxRelay(options: OutboxRelayOptions): OutboxRelay {
  const { db, table, stream } = options;
  const log = options.logger.child({ component: "outbox" });
  const batch = options.batch ?? 100;
  let lastSweep = 0;

  /** One pass: returns whether a full batch went out (so there may be more). */
  async function publishBatch(): Promise<boolean> {
    return db.transaction(async (tx) => {
      const rows = await tx
        .select({ seq: table.seq, event: table.event })
        .from(table)
        .where(isNull(table.sentAt))
        .orderBy(asc(table.seq))
        .limit(batch)
        .for("update", { skipLocked: true });
      const sent: number[] = [];
      let failure: unknown = null;
      for (const row of rows) {
        try {
          await stream.publish(row.event);
          sent.push(row.seq);
        } catch (error) {
          // Keep the order: nothing after a failed event goes out before it.
          failure = error;
          break;
        }
      }
      if (sent.length > 0) await tx.update(table).set({ sentAt: new Date() }).where(inArray(table.seq, sent));
      if (failure)
        log.warn("publishing events failed; they stay in the outbox and are retried", {
          pending: rows.length - sent.length,
          error: failure,
        });
      return failure === null && rows.length === batch;
    });
  }

  async function sweep(): Promise<void> {
    if (Date.now() - lastSweep < SWEEP_EVERY_MS) return;
    lastSweep = Date.now();
    await db.delete(table).where(and(isNotNull(table.sentAt), lt(table.sentAt, new Date(Date.now() - SENT_KEPT_MS))));
  }

  const loop = createBatchLoop({
    pass: async () => {
      if (await publishBatch()) return true;
      // After the last batch of a run, sent rows past their keeping time go.
      await sweep();
      return false;
    },
    pollMs: options.pollMs ?? 2_000,
    logger: log,
    failure: "outbox relay pass failed; retrying on the next poll",
  });

  return {
    start: loop.start,
    flush: loop.run,
    stop: loop.stop,
    async lag() {
      const [row] = await db
        .select({
          pending: sql<number>`count(*)::int`,
          oldestSeconds: sql<number>`coalesce(extract(epoch from now() - min(${table.createdAt})), 0)::float8`,
        })
        .from(table)
        .where(isNull(table.sentAt));
      return { pending: Number(row?.pending ?? 0), oldestSeconds: Number(row?.oldestSeconds ?? 0) };
    },
  };
}
