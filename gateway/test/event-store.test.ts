import { describe, expect, test } from "bun:test";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { SessionEventStore } from "../src/mcp/event-store.ts";

const note = (n: number): JSONRPCMessage => ({ jsonrpc: "2.0", method: "notifications/message", params: { n } });

async function replay(store: SessionEventStore, after: string) {
  const sent: [string, unknown][] = [];
  const stream = await store.replayEventsAfter(after, {
    send: async (id, message) => void sent.push([id, (message as unknown as { params: { n: number } }).params.n]),
  });
  return { stream, sent };
}

describe("SessionEventStore", () => {
  test("replays, in order, only what its stream sent after the given id", async () => {
    const store = new SessionEventStore();
    const a1 = await store.storeEvent("get", note(1));
    await store.storeEvent("post-7", note(100));
    await store.storeEvent("get", note(2));
    await store.storeEvent("get", note(3));
    expect(await replay(store, a1)).toEqual({
      stream: "get",
      sent: [
        ["get.2", 2],
        ["get.3", 3],
      ],
    });
    expect(await store.getStreamIdForEventId(a1)).toBe("get");
  });

  test("an unknown or malformed id resumes nothing", async () => {
    const store = new SessionEventStore();
    await store.storeEvent("get", note(1));
    expect(await replay(store, "other.1")).toEqual({ stream: "", sent: [] });
    expect(await replay(store, "garbage")).toEqual({ stream: "", sent: [] });
    expect(await store.getStreamIdForEventId("garbage")).toBeUndefined();
  });

  test("keeps a bounded number of messages per stream", async () => {
    const store = new SessionEventStore();
    const first = await store.storeEvent("get", note(0));
    for (let i = 1; i <= 250; i++) await store.storeEvent("get", note(i));
    const { sent } = await replay(store, first);
    expect(sent).toHaveLength(200);
    expect(sent[0]).toEqual(["get.52", 51]);
  });
});
