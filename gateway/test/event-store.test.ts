import { describe, expect, test } from "bun:test";
import { createLogger, createMemoryBus } from "@hatch/platform";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { createEventLog, parseEventId, postedRequests, SessionEventStore } from "../src/mcp/event-store.ts";

const note = (n: number): JSONRPCMessage => ({ jsonrpc: "2.0", method: "notifications/message", params: { n } });
const logger = createLogger({ level: "silent" });

/** What a follower of (session, stream) after `after` reads until it has `count` events. */
async function read(
  log: ReturnType<typeof createEventLog>,
  session: string,
  stream: string,
  after: number,
  count: number,
) {
  const stop = new AbortController();
  const got: [number, unknown][] = [];
  for await (const event of log.follow(session, stream, after, stop.signal)) {
    got.push([event.seq, (event.message as unknown as { params?: { n: number } }).params?.n ?? null]);
    if (got.length >= count) stop.abort();
  }
  return got;
}

describe("the shared MCP event log (in-process)", () => {
  test("a store writes to the log its bus shares: another copy's store on the same bus reads it, in order", async () => {
    const bus = createMemoryBus({ logger });
    const a = new SessionEventStore(createEventLog(bus, logger), "s1", "copyA", logger);
    const first = parseEventId(await a.storeEvent("get", note(1)))!;
    await a.storeEvent("post-7", note(100));
    await a.storeEvent("get", note(2));
    await a.storeEvent("get", note(3));
    // Another copy (another log object on the same bus) replays only that stream's events after the id.
    const got = await read(createEventLog(bus, logger), "s1", "get", first.seq, 2);
    expect(got.map(([, n]) => n)).toEqual([2, 3]);
    expect(got[0]![0]).toBeGreaterThan(first.seq);
    // Another session's stream of the same name has nothing of it.
    const other = createEventLog(bus, logger);
    await other.append("s2", "get", { message: note(9), copy: "copyB" });
    expect((await read(other, "s2", "get", 0, 1)).map(([, n]) => n)).toEqual([9]);
  });

  test("a follower gets events appended after it started (live), and a stream's first event names its requests", async () => {
    const bus = createMemoryBus({ logger });
    const log = createEventLog(bus, logger);
    const store = new SessionEventStore(log, "s1", "copyA", logger);
    await postedRequests.run([7], () => store.storeEvent("post", {} as JSONRPCMessage));
    const reading = (async () => {
      const stop = new AbortController();
      const got: { requests?: unknown; copy: string }[] = [];
      for await (const event of log.follow("s1", "post", 0, stop.signal)) {
        got.push({ requests: event.requests, copy: event.copy });
        if (got.length === 2) stop.abort();
      }
      return got;
    })();
    await store.storeEvent("post", { jsonrpc: "2.0", id: 7, result: {} });
    expect(await reading).toEqual([
      { requests: [7], copy: "copyA" },
      { requests: undefined, copy: "copyA" },
    ]);
  });

  test("event ids: only <stream>.<seq> of safe characters", () => {
    expect(parseEventId("get.12")).toEqual({ stream: "get", seq: 12 });
    expect(parseEventId("_GET_stream.3")).toEqual({ stream: "_GET_stream", seq: 3 });
    for (const bad of ["garbage", "a.b.c", ".1", "x.", "a b.1", `${"a".repeat(65)}.1`])
      expect(parseEventId(bad)).toBeNull();
  });

  test("keeps a bounded number of messages per stream", async () => {
    const bus = createMemoryBus({ logger });
    const log = createEventLog(bus, logger);
    for (let i = 0; i <= 600; i++) await log.append("s1", "get", { message: note(i), copy: "c" });
    const got = await read(log, "s1", "get", 0, 500);
    expect(got).toHaveLength(500);
    expect(got[0]![1]).toBe(101);
  });
});

describe("a stream's first event while the shared log does not answer", () => {
  /** The log, whose first `failures` appends fail as JetStream's do while a new leader is elected. */
  function failingLog(failures: number) {
    const log = createEventLog(createMemoryBus({ logger }), logger);
    const attempts = { n: 0 };
    const flaky: typeof log = {
      append: async (...args) => {
        if (attempts.n++ < failures) throw new Error("jetstream is not enabled");
        return log.append(...args);
      },
      follow: (...args) => log.follow(...args),
    };
    return { log, flaky, attempts };
  }

  test("is tried again until it is kept: the stream gets an id and names its requests (found by reliability --scale)", async () => {
    const { log, flaky, attempts } = failingLog(2);
    const store = new SessionEventStore(flaky, "s1", "copyA", logger);
    const id = await postedRequests.run([7], () => store.storeEvent("post", {} as JSONRPCMessage));
    expect(parseEventId(id)).not.toBeNull();
    expect(attempts.n).toBe(3);
    const [first] = await read(log, "s1", "post", 0, 1);
    expect(first).toBeDefined();
    const stop = new AbortController();
    for await (const event of log.follow("s1", "post", 0, stop.signal)) {
      expect(event.requests).toEqual([7]);
      expect(event.copy).toBe("copyA");
      break;
    }
  });

  test("gives up after a few seconds, and a later event is tried once: both go out without an id", async () => {
    const { flaky, attempts } = failingLog(1_000);
    const store = new SessionEventStore(flaky, "s2", "copyA", logger);
    expect(await postedRequests.run([8], () => store.storeEvent("post", {} as JSONRPCMessage))).toBe("");
    expect(attempts.n).toBe(5);
    expect(await store.storeEvent("post", note(1))).toBe("");
    expect(attempts.n).toBe(6);
  });
});
