import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { Client as Client2026, StreamableHTTPClientTransport as Transport2026 } from "@modelcontextprotocol/client";
import { createLogger } from "@hatch/platform";
import { createSessionDirectory } from "../gateway/src/mcp/session-directory.ts";
import { startTwoCopies } from "./support/copies.ts";
import { eventually } from "./support/eventually.ts";
import { connectClient, connectFormClient, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";
import { readEvents, type SseEvent } from "./support/sse.ts";
import { startStandInApps, type StandInApps } from "./support/stand-in-apps.ts";

// Any gateway copy serves any request: two copies behind a round-robin proxy, requests alternating between them, for a
// 2025-11-25 client (its session, its forms) and a 2026-07-28 client (its input_required round trip).
for (const mode of MODES) {
  describe(`two gateway copies, no affinity (${mode})`, () => {
    let setup: Awaited<ReturnType<typeof startTwoCopies>>;
    let apps: StandInApps;
    let user: Awaited<ReturnType<typeof userWithToken>>;

    beforeAll(async () => {
      setup = await startTwoCopies(mode);
      apps = await startStandInApps(setup.hatch);
      user = await userWithToken(setup.hatch, { name: "Two Copies" });
    }, 60_000);
    afterAll(async () => {
      await apps?.stop();
      await setup?.stop();
    });
    beforeEach(() => {
      apps.reset();
      setup.routed.length = 0;
    });

    test("a 2025 client keeps its session across copies: every call answers, on both copies", async () => {
      const client = await connectClient(setup.hatch, user.accessToken);
      for (let i = 0; i < 6; i++) {
        const result = await client.callTool({ name: "whoami", arguments: {} });
        expect(result.isError).toBeFalsy();
        expect(result.structuredContent).toMatchObject({ name: "Two Copies" });
      }
      expect((await client.listTools()).tools.length).toBeGreaterThan(20);
      await client.close();
      const calls = setup.routed.filter((r) => r.what === "tools/call");
      expect(new Set(calls.map((r) => r.backend))).toEqual(new Set([0, 1]));
    });

    test("a 2025 client's form: the answer posted to the other copy reaches the copy that asked", async () => {
      const { client, asked } = await connectFormClient(setup.hatch, user.accessToken, () => ({
        action: "accept",
        content: { confirm: true },
      }));
      for (const address of ["first-app", "second-app"]) {
        setup.routed.length = 0;
        const result = await client.callTool({ name: "delete_tool", arguments: { address } });
        expect(result.structuredContent).toEqual({ status: "deleted", address });
        const call = setup.routed.find((r) => r.what === "tools/call")!;
        const answer = setup.routed.find((r) => r.what === "answer")!;
        expect(answer).toBeDefined();
        expect(answer.backend).not.toBe(call.backend);
      }
      await client.close();
      expect(asked).toHaveLength(2);
      expect(apps.acted.map((a) => a.input)).toEqual([{ address: "first-app" }, { address: "second-app" }]);
    });

    test("a session opened with one grant refuses another grant's token of the same user, on either copy", async () => {
      const client = await connectClient(setup.hatch, user.accessToken);
      let session = "";
      const sessionOf = client.transport as unknown as { sessionId?: string };
      session = sessionOf.sessionId ?? "";
      expect(session).toBeTruthy();
      const second = await setup.hatch.gateway.auth.issueTokenForScript({ email: user.email });
      for (let i = 0; i < 2; i++) {
        const response = await fetch(setup.hatch.mcpUrl, {
          method: "POST",
          headers: {
            Authorization: `Bearer ${second.accessToken}`,
            "Content-Type": "application/json",
            Accept: "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
            "Mcp-Session-Id": session,
          },
          body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
        });
        expect(response.status).toBe(404);
      }
      // The session's own grant still works.
      expect((await client.listTools()).tools.length).toBeGreaterThan(20);
      await client.close();
    });

    test("a 2026 client's question: asked on one copy, finished on the other, acted once", async () => {
      const client = new Client2026(
        { name: "claude-code", version: "3.0.0" },
        { versionNegotiation: { mode: { pin: "2026-07-28" } }, capabilities: { elicitation: { form: {} } } },
      );
      client.setRequestHandler("elicitation/create", async () => ({ action: "accept", content: { confirm: true } }));
      await client.connect(
        new Transport2026(new URL(setup.hatch.mcpUrl), {
          requestInit: { headers: { Authorization: `Bearer ${user.accessToken}` } },
        }),
      );
      for (const address of ["third-app", "fourth-app"]) {
        setup.routed.length = 0;
        const result = await client.callTool({ name: "delete_tool", arguments: { address } });
        expect(result.structuredContent).toEqual({ status: "deleted", address });
        const rounds = setup.routed.filter((r) => r.what === "tools/call");
        expect(rounds).toHaveLength(2);
        expect(rounds[0]!.backend).not.toBe(rounds[1]!.backend);
      }
      await client.close();
      expect(apps.acted.map((a) => a.input)).toEqual([{ address: "third-app" }, { address: "fourth-app" }]);
    });
    /** Raw 2025 HTTP to one copy (not through the proxy), as a client library sends it. */
    const raw = (url: string, session: string | null, body?: unknown, headers: Record<string, string> = {}) =>
      fetch(url, {
        method: body === undefined ? "GET" : "POST",
        headers: {
          Authorization: `Bearer ${user.accessToken}`,
          // The public host (the proxy's), as the proxy passes it on.
          Host: new URL(setup.hatch.mcpUrl).host,
          "Content-Type": "application/json",
          Accept: body === undefined ? "text/event-stream" : "application/json, text/event-stream",
          "MCP-Protocol-Version": "2025-11-25",
          ...(session ? { "Mcp-Session-Id": session } : {}),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    /** A session that answers over SSE (it declared elicitation), opened on copy `on`. */
    async function sseSession(on: number): Promise<string> {
      const init = await raw(setup.copyUrls[on]!, null, {
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
      await readEvents(init, (events) => events.some((e) => e.data?.includes('"result"')));
      await raw(setup.copyUrls[on]!, session, { jsonrpc: "2.0", method: "notifications/initialized" });
      return session;
    }
    /** Starts a tools/call on copy `on` and drops its stream right after the priming event; returns that event's id. */
    async function callAndDrop(on: number, session: string, id: number, name: string, args: object): Promise<string> {
      const call = await raw(setup.copyUrls[on]!, session, {
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: { name, arguments: args },
      });
      expect(call.headers.get("content-type")).toContain("text/event-stream");
      const [priming] = await readEvents(call, (events) => events.length >= 1);
      expect(priming?.id).toBeTruthy();
      return priming!.id!;
    }
    const resume = (on: number, session: string, lastEventId: string) =>
      raw(setup.copyUrls[on]!, session, undefined, { "Last-Event-ID": lastEventId });
    const messageOf = (event: SseEvent | undefined) => JSON.parse(event?.data ?? "null");

    test("a dropped stream resumes on the other copy: Last-Event-ID there gives what was missed", async () => {
      const session = await sseSession(0);
      const last = await callAndDrop(1, session, 2, "whoami", {});
      const resumed = await resume(0, session, last);
      expect(resumed.status).toBe(200);
      const events = await readEvents(resumed, (e) => e.some((x) => x.data?.includes('"id":2')));
      const result = events.find((e) => e.data?.includes('"id":2'));
      expect(result?.id).toBeTruthy();
      expect(messageOf(result).result.structuredContent).toMatchObject({ name: "Two Copies" });
      // An id that names nothing of this session is refused, not guessed at.
      expect((await resume(0, session, "not an id")).status).toBe(400);
    });

    test("a call running on one copy is followed live from the other: its question, then (after the answer) its result", async () => {
      const session = await sseSession(0);
      const last = await callAndDrop(1, session, 3, "delete_tool", { address: "live-app" });
      const resumed = await resume(0, session, last);
      const reader = resumed.body!;
      // The question copy 1 asks arrives on copy 0's stream; answered on copy 0, it reaches copy 1 over the bus; the
      // result copy 1 sends after that can only come live.
      const events: SseEvent[] = [];
      const all = readEvents(new Response(reader), (e) => {
        events.splice(0, events.length, ...e);
        return e.some((x) => x.data?.includes('"id":3'));
      });
      let question: { id: string; method: string } | undefined;
      while (!question) {
        await Bun.sleep(20);
        question = events.map(messageOf).find((m) => m?.method === "elicitation/create");
      }
      expect(apps.acted).toEqual([]);
      const answered = await raw(setup.copyUrls[0]!, session, {
        jsonrpc: "2.0",
        id: question.id,
        result: { action: "accept", content: { confirm: true } },
      });
      expect(answered.status).toBe(202);
      const done = await all;
      const result = messageOf(done.find((e) => e.data?.includes('"id":3')));
      expect(result.result.structuredContent).toEqual({ status: "deleted", address: "live-app" });
      expect(apps.acted.map((a) => a.input)).toEqual([{ address: "live-app" }]);
    });

    test.skipIf(mode !== "real")(
      "the copy running a followed call crashes: the client gets one clear error to check and retry, not a hang",
      async () => {
        const session = await sseSession(0);
        const last = await callAndDrop(1, session, 4, "delete_tool", { address: "crash-app" });
        const resumed = await resume(0, session, last);
        const events: SseEvent[] = [];
        const all = readEvents(resumed, (e) => {
          events.splice(0, events.length, ...e);
          return e.some((x) => x.data?.includes('"id":4'));
        });
        while (!events.map(messageOf).some((m) => m?.method === "elicitation/create")) await Bun.sleep(20);
        await setup.crashSecond();
        const done = await all;
        const answers = done.map(messageOf).filter((m) => m?.id === 4);
        expect(answers).toHaveLength(1);
        expect(answers[0].error.message).toContain("stopped before it answered");
        expect(answers[0].error.message).toContain("call again");
        expect(apps.acted).toEqual([]);
      },
      30_000,
    );

    // In-process only: there the copies share one directory object, whose writes the test can make fail as JetStream's
    // do while a new leader is elected (found by `bun run reliability --scale`: a session opened just after a NATS node
    // went away answered 404 on the other copy for good, and its client had to start over).
    test.skipIf(mode !== "embedded")(
      "a session whose record could not be written at first is served by the other copy once it is written",
      async () => {
        const directory = createSessionDirectory(setup.hatch.bus, 60_000, createLogger({ level: "silent" }));
        const put = directory.put.bind(directory);
        let failures = 2;
        directory.put = async (id, record) => {
          if (failures-- > 0) throw new Error("jetstream is not enabled");
          return put(id, record);
        };
        try {
          const list = (session: string) =>
            raw(setup.copyUrls[1]!, session, { jsonrpc: "2.0", id: 3, method: "tools/list" });
          // A short outage: the initialize waits for the record, so the very next request may go to the other copy.
          const first = await sseSession(0);
          expect((await list(first)).status).toBe(200);
          // A longer one: the session starts, served by its copy alone, and the record lands afterwards.
          failures = 6;
          const second = await sseSession(0);
          await eventually(
            async () => (await list(second)).status === 200,
            "the other copy to serve the session",
            20_000,
          );
          expect(failures).toBeLessThan(0);
        } finally {
          directory.put = put;
        }
      },
      30_000,
    );
  });
}
