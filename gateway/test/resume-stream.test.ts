import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createLogger, createMemoryBus } from "@hatch/platform";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { createEventLog, postedRequests, SessionEventStore, type McpEventLog } from "../src/mcp/event-store.ts";
import { COPY_CHECK_MS, COPY_GONE_AFTER_MS, COPY_GONE_MESSAGE, resumeStream } from "../src/mcp/resume.ts";

// A resumed stream (GET /mcp with Last-Event-ID) follows the shared log. On NATS that log is JetStream key-value: when
// a node goes away, reading it fails for a moment (a new stream leader is elected, the watch's consumer request times
// out). Found by `bun run reliability --scale`: the failure escaped as an unhandled rejection and ended the gateway.

const logger = createLogger({ level: "silent" });
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => void unhandled.push(reason);
beforeEach(() => {
  unhandled.length = 0;
  process.on("unhandledRejection", onUnhandled);
});
afterEach(() => {
  process.off("unhandledRejection", onUnhandled);
});

/** The log, whose first `failures` follows throw as JetStream's request timeout does. */
function flakyLog(log: McpEventLog, failures: number): McpEventLog & { attempts: number } {
  const flaky = {
    attempts: 0,
    append: log.append.bind(log),
    follow(session: string, stream: string, after: number, signal: AbortSignal): AsyncIterable<never> {
      flaky.attempts++;
      if (flaky.attempts <= failures)
        return {
          [Symbol.asyncIterator]: () => ({
            next: () => Promise.reject(Object.assign(new Error("timeout"), { name: "TimeoutError" })),
          }),
        };
      return log.follow(session, stream, after, signal) as AsyncIterable<never>;
    },
  };
  return flaky as unknown as McpEventLog & { attempts: number };
}

describe("a resumed MCP stream while the shared log does not answer", () => {
  test("reads the log again and delivers the call's result; nothing escapes as an unhandled rejection", async () => {
    const bus = createMemoryBus({ logger });
    const log = createEventLog(bus, logger);
    const store = new SessionEventStore(log, "s1", "copyA", logger);
    // The call's stream as the copy running it wrote it: a first event naming request 7, then (later) its result.
    const first = await postedRequests.run([7], () => store.storeEvent("post", {} as JSONRPCMessage));
    const flaky = flakyLog(log, 2);
    const response = resumeStream({
      log: flaky,
      session: "s1",
      lastEventId: first,
      copyAlive: async () => true,
      closing: new AbortController().signal,
      logger,
    });
    const body = response.text();
    await Bun.sleep(50);
    await store.storeEvent("post", { jsonrpc: "2.0", id: 7, result: { content: [] } } as JSONRPCMessage);
    const text = await body;
    expect(flaky.attempts).toBe(3);
    expect(text).toContain('"id":7');
    expect(text).toContain('"result"');
    await Bun.sleep(10);
    expect(unhandled).toEqual([]);
  });

  test("a client that goes away while the log does not answer ends the follow", async () => {
    const bus = createMemoryBus({ logger });
    const log = createEventLog(bus, logger);
    const store = new SessionEventStore(log, "s2", "copyA", logger);
    const first = await postedRequests.run([8], () => store.storeEvent("post", {} as JSONRPCMessage));
    const flaky = flakyLog(log, 1_000);
    const closing = new AbortController();
    const response = resumeStream({
      log: flaky,
      session: "s2",
      lastEventId: first,
      copyAlive: async () => true,
      closing: closing.signal,
      logger,
    });
    const reading = response.text();
    await Bun.sleep(1_200);
    closing.abort();
    await reading;
    const tries = flaky.attempts;
    expect(tries).toBeGreaterThan(1);
    await Bun.sleep(1_100);
    expect(flaky.attempts).toBe(tries);
    expect(unhandled).toEqual([]);
  });
});

describe("a resumed MCP stream whose call runs on a copy that stopped", () => {
  test("ends with one error the AI can act on, from the first checks on (no wait for a quiet stream)", async () => {
    const bus = createMemoryBus({ logger });
    const log = createEventLog(bus, logger);
    const store = new SessionEventStore(log, "s3", "copyGone", logger);
    const first = await postedRequests.run([9], () => store.storeEvent("post", {} as JSONRPCMessage));
    const asked: string[] = [];
    const response = resumeStream({
      log,
      session: "s3",
      lastEventId: first,
      copyAlive: async (copy) => {
        asked.push(copy);
        return false;
      },
      closing: new AbortController().signal,
      logger,
    });
    const text = await response.text();
    expect(text).toContain('"id":9');
    expect(text).toContain(COPY_GONE_MESSAGE);
    expect(new Set(asked)).toEqual(new Set(["copyGone"]));
    // Judged gone once the checks had said so for the whole window, not on the first no.
    expect(asked.length).toBeGreaterThanOrEqual(Math.floor(COPY_GONE_AFTER_MS / COPY_CHECK_MS));
    expect(unhandled).toEqual([]);
  });

  test("a copy missing for one check (reconnecting to NATS) still delivers the call's result", async () => {
    const bus = createMemoryBus({ logger });
    const log = createEventLog(bus, logger);
    const store = new SessionEventStore(log, "s4", "copyBack", logger);
    const first = await postedRequests.run([10], () => store.storeEvent("post", {} as JSONRPCMessage));
    let checks = 0;
    const response = resumeStream({
      log,
      session: "s4",
      lastEventId: first,
      copyAlive: async () => ++checks > 1,
      closing: new AbortController().signal,
      logger,
    });
    const body = response.text();
    while (checks < 3) await Bun.sleep(COPY_CHECK_MS / 5);
    await store.storeEvent("post", { jsonrpc: "2.0", id: 10, result: { content: [] } } as JSONRPCMessage);
    const text = await body;
    expect(text).toContain('"result"');
    expect(text).not.toContain(COPY_GONE_MESSAGE);
  });
});
