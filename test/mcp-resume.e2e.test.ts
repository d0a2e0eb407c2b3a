import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { userWithToken } from "./support/mcp.ts";
import { readEvents } from "./support/sse.ts";

// Resumable MCP streams (streamable HTTP, 2025-11-25): a streamed answer opens with a priming event that carries an
// id and the reconnect delay, every event has an id, and a client whose stream dropped gets what it missed by
// reconnecting with Last-Event-ID. Driven with raw HTTP, as a client library would do it.

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
