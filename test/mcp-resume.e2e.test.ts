import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { userWithToken } from "./support/mcp.ts";

// Resumable MCP streams (streamable HTTP, 2025-11-25): a streamed answer opens with a priming event that carries an
// id and the reconnect delay, every event has an id, and a client whose stream dropped gets what it missed by
// reconnecting with Last-Event-ID. Driven with raw HTTP, as a client library would do it.

interface SseEvent {
  id?: string;
  retry?: string;
  data?: string;
}

/** Reads SSE events from a response body until `enough` says stop, then drops the connection. */
async function readEvents(response: Response, enough: (events: SseEvent[]) => boolean): Promise<SseEvent[]> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const events: SseEvent[] = [];
  let buffer = "";
  while (!enough(events)) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut: number;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const event: SseEvent = {};
      for (const line of block.split("\n")) {
        const colon = line.indexOf(":");
        if (colon <= 0) continue;
        const field = line.slice(0, colon) as keyof SseEvent;
        const value = line.slice(colon + 1).replace(/^ /, "");
        if (field === "id" || field === "retry" || field === "data")
          event[field] = event[field] === undefined ? value : `${event[field]}\n${value}`;
      }
      if (Object.keys(event).length) events.push(event);
    }
  }
  await reader.cancel().catch(() => undefined);
  return events;
}

describe("resumable MCP streams (embedded)", () => {
  let hatch: TestHatch;
  let token = "";

  beforeAll(async () => {
    hatch = await startTestHatch("embedded");
    token = (await userWithToken(hatch, { name: "Resume" })).accessToken;
  }, 60_000);
  afterAll(async () => {
    await hatch?.stop();
  });

  const post = (body: unknown, session?: string) =>
    fetch(hatch.mcpUrl, {
      method: "POST",
      headers: {
        Authorization: `Bearer ${token}`,
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
        ...(session ? { "Mcp-Session-Id": session } : {}),
      },
      body: JSON.stringify(body),
    });

  test("a streamed answer starts with a priming event (id, retry); after a drop, Last-Event-ID gives the missed result", async () => {
    // Declaring elicitation makes this session answer over SSE (the gateway may ask the user mid-call).
    const init = await post({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: { elicitation: {} },
        clientInfo: { name: "resume-test", version: "1" },
      },
    });
    const session = init.headers.get("mcp-session-id")!;
    expect(session).toBeTruthy();
    await readEvents(init, (events) => events.some((e) => e.data?.includes('"result"')));
    await post({ jsonrpc: "2.0", method: "notifications/initialized" }, session);

    const call = await post(
      { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "whoami", arguments: {} } },
      session,
    );
    expect(call.headers.get("content-type")).toContain("text/event-stream");
    // Drop the stream right after its priming event: the result is sent while nobody reads.
    const [priming] = await readEvents(call, (events) => events.length >= 1);
    expect(priming?.id).toBeTruthy();
    expect(priming?.retry).toBe("2000");
    expect(priming?.data ?? "").toBe("");

    const resumed = await fetch(hatch.mcpUrl, {
      headers: {
        Authorization: `Bearer ${token}`,
        Accept: "text/event-stream",
        "Mcp-Session-Id": session,
        "Last-Event-ID": priming!.id!,
        "MCP-Protocol-Version": "2025-11-25",
      },
    });
    expect(resumed.status).toBe(200);
    const replayed = await readEvents(resumed, (events) => events.some((e) => e.data?.includes('"id":2')));
    const result = replayed.find((e) => e.data?.includes('"id":2'));
    expect(result?.id).toBeTruthy();
    expect(result?.id).not.toBe(priming!.id);
    expect(JSON.parse(result!.data!).result.structuredContent).toMatchObject({ kind: "personal", name: "Resume" });
  }, 30_000);
});
