import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { pgSchema } from "drizzle-orm/pg-core";
import {
  createLogger,
  createMemoryBus,
  createNatsBus,
  createOutboxRelay,
  decodeJson,
  deleteEventsStream,
  eventStreamFor,
  openServiceDatabase,
  outboxTable,
  writeEvent,
  type Bus,
  type EventStream,
  type NatsBus,
} from "@hatch/platform";
import { newEvent, type HatchEvent } from "@hatch/contracts";
import { eventually } from "../../../test/support/eventually.ts";
import { openSchemaDatabase } from "../../../test/support/schema-database.ts";

const logger = createLogger({ level: "silent" });
const natsUrl = process.env.TEST_NATS_URL;
let counter = 0;
const uniquePrefix = () => `ev${process.env.HATCH_TEST_RUN}${process.pid}${++counter}`.replace(/[^A-Za-z0-9_-]/g, "");

const event = (verb: string, details: Record<string, unknown> = {}): HatchEvent =>
  newEvent("apps", null, {
    entity: "app",
    verb,
    summary: `app ${verb}`,
    app: "my-app",
    account: "acc_1",
    org: "acc_1",
    details,
  });

/** One contract, two implementations: the in-memory stream and JetStream on nats-server. */
function streamContract(name: string, make: () => Promise<{ bus: Bus; cleanup(): Promise<void> }>, enabled: boolean) {
  describe.skipIf(!enabled)(`event stream contract: ${name}`, () => {
    let bus: Bus;
    let stream: EventStream;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ bus, cleanup } = await make());
      stream = eventStreamFor(bus);
    });
    afterAll(async () => cleanup?.());

    test("a durable consumer gets each event once, in order, and the same id published twice is stored once", async () => {
      const seen: string[] = [];
      const consumer = stream.consume({ name: "c-order", handler: async (e) => void seen.push(e.verb), logger });
      const first = event("published");
      await stream.publish(first);
      await stream.publish(first);
      await stream.publish(event("shared"));
      await eventually(() => seen.length >= 2, "two events");
      await stream.publish(event("deleted"));
      await eventually(() => seen.length >= 3, "three events");
      expect(seen).toEqual(["published", "shared", "deleted"]);
      await consumer.stop();
    });

    test("a stopped consumer catches up from where it was when started again under its name", async () => {
      const seen: string[] = [];
      const handler = async (e: HatchEvent) => void seen.push(e.details.n as string);
      let consumer = stream.consume({ name: "c-durable", filter: "events.apps.app.moved", handler, logger });
      await stream.publish(event("moved", { n: "1" }));
      await eventually(() => seen.length === 1, "the first event");
      await consumer.stop();
      await stream.publish(event("moved", { n: "2" }));
      await stream.publish(event("paused", { n: "not mine" }));
      await stream.publish(event("moved", { n: "3" }));
      consumer = stream.consume({ name: "c-durable", filter: "events.apps.app.moved", handler, logger });
      await eventually(() => seen.length === 3, "the missed events");
      expect(seen).toEqual(["1", "2", "3"]);
      await consumer.stop();
    });

    test("an event is offered again until its handler succeeds", async () => {
      let attempts = 0;
      const consumer = stream.consume({
        name: "c-retry",
        filter: "events.apps.app.retried",
        handler: async () => {
          attempts++;
          if (attempts < 2) throw new Error("not yet");
        },
        logger,
      });
      await stream.publish(event("retried"));
      await eventually(() => attempts >= 2, "a second delivery");
      await consumer.stop();
      expect(attempts).toBe(2);
    });

    test("plain bus subscribers of the subject hear the event too", async () => {
      const heard: unknown[] = [];
      const sub = bus.subscribe("events.apps.app.*", (msg) => void heard.push(decodeJson(msg.data)));
      await bus.flush();
      const e = event("renamed");
      await stream.publish(e);
      await eventually(() => heard.length > 0, "the plain subscriber");
      expect(heard[0]).toMatchObject({ id: e.id, verb: "renamed" });
      sub.unsubscribe();
    });
  });
}

streamContract(
  "memory",
  async () => {
    const bus = createMemoryBus();
    return { bus, cleanup: () => bus.drain() };
  },
  true,
);

streamContract(
  "jetstream",
  async () => {
    const bus = await createNatsBus({ url: natsUrl!, prefix: uniquePrefix() });
    return {
      bus,
      async cleanup() {
        await deleteEventsStream(bus as NatsBus);
        await bus.drain();
      },
    };
  },
  Boolean(natsUrl),
);

const evtest = pgSchema("evtest");
const outbox = outboxTable(evtest);
const OUTBOX_SQL = `create schema if not exists evtest;
create table evtest.outbox (seq bigserial primary key, id text not null unique, subject text not null, event jsonb not null,
  created_at timestamptz not null default now(), sent_at timestamptz)`;

describe("outbox and relay", () => {
  let db: Awaited<ReturnType<typeof openServiceDatabase>>["db"];
  let close: () => Promise<void>;
  const published: HatchEvent[] = [];
  let failing = false;
  const stream: EventStream = {
    kind: "memory",
    async publish(e) {
      if (failing) throw new Error("bus down");
      published.push(e);
    },
    consume() {
      throw new Error("unused");
    },
  };

  beforeAll(async () => {
    ({ db, close } = await openSchemaDatabase({
      schema: "evtest",
      migrationsFolder: new URL("./fixtures/no-migrations", import.meta.url).pathname,
      serverUrl: process.env.TEST_DATABASE_URL,
    }));
    for (const statement of OUTBOX_SQL.split(";")) await db.execute(statement);
  });
  afterAll(async () => close?.());

  test("an event exists only if its transaction commits; the relay publishes in order and marks it sent", async () => {
    const relay = createOutboxRelay({ db, table: outbox, stream, logger });
    await db
      .transaction(async (tx) => {
        await writeEvent(tx, outbox, event("rolled_back"));
        throw new Error("abort");
      })
      .catch(() => {});
    const kept = [event("published"), event("shared")];
    await db.transaction(async (tx) => {
      for (const e of kept) await writeEvent(tx, outbox, e);
    });
    await relay.flush();
    expect(published.map((e) => e.id)).toEqual(kept.map((e) => e.id));
    await relay.flush();
    expect(published).toHaveLength(2);
    const rows = await db.select({ id: outbox.id, sentAt: outbox.sentAt }).from(outbox);
    expect(rows.map((r) => r.id).sort()).toEqual(kept.map((e) => e.id).sort());
    expect(rows.every((r) => r.sentAt !== null)).toBe(true);
  });

  test("while the stream is down events wait in the outbox and go out later, in order", async () => {
    published.length = 0;
    const relay = createOutboxRelay({ db, table: outbox, stream, logger });
    failing = true;
    const waiting = [event("a"), event("b"), event("c")];
    for (const e of waiting) await db.transaction((tx) => writeEvent(tx, outbox, e));
    await relay.flush();
    expect(published).toHaveLength(0);
    failing = false;
    await relay.flush();
    expect(published.map((e) => e.verb)).toEqual(["a", "b", "c"]);
  });

  test("an event that breaks the schema is refused at write time", async () => {
    const bad = { ...event("ok"), verb: "Not A Token" };
    await expect(db.transaction((tx) => writeEvent(tx, outbox, bad))).rejects.toThrow();
  });
});
