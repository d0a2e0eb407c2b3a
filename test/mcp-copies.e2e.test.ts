import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { Client as Client2026, StreamableHTTPClientTransport as Transport2026 } from "@modelcontextprotocol/client";
import { startTwoCopies } from "./support/copies.ts";
import { connectClient, connectFormClient, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";
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
  });
}
