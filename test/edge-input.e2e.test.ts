import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  CallReplySchema,
  deriveKey,
  signContext,
  subjects,
  type CallContextClaims,
  type CallReply,
} from "@hatch/contracts";
import { decodeJson, encodeJson } from "@hatch/platform";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { Browser } from "../gateway/test/oauth-harness.ts";
import { startTestHatch, TEST_SECRET, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

// What a caller controls at the edge: free text fields (control characters, only spaces), the size of a call
// against the bus's message limit, the client's self-declared name, and how many MCP sessions one user holds.

type User = Awaited<ReturnType<typeof userWithToken>>;
const PASSWORD = "correct horse battery";
const ctxKey = deriveKey(TEST_SECRET, "ctx");
const page = (title: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1></body></html>`;

/** The tool's error text; fails the test when the call succeeded. */
async function refusal(client: Client, name: string, args: Record<string, unknown>): Promise<string> {
  const result = await client.callTool({ name, arguments: args });
  if (!result.isError) throw new Error(`${name} succeeded: ${JSON.stringify(result.structuredContent)}`);
  return textOf(result);
}

for (const mode of MODES) {
  describe(`free text fields at the edge (${mode})`, () => {
    let hatch: TestHatch;
    let user: User;
    let client: Client;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      user = await userWithToken(hatch, { name: "Edge" });
      client = await connectClient(hatch, user.accessToken);
    }, 60_000);
    afterAll(async () => {
      await client?.close();
      await hatch?.stop();
    });

    const files = [{ path: "index.html", content: page("Edge"), encoding: "utf8" }];
    test("tools/call with arguments that are not an object: invalid params in one line, not an internal error", async () => {
      for (const args of ["x", [1, 2], 7]) {
        const response = await fetch(hatch.mcpUrl, {
          method: "POST",
          headers: {
            Authorization: `Bearer ${user.accessToken}`,
            "Content-Type": "application/json",
            Accept: "application/json, text/event-stream",
          },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 9,
            method: "tools/call",
            params: { name: "whoami", arguments: args },
          }),
        });
        const body = (await response.json()) as { id: number; error: { code: number; message: string } };
        expect(body.id).toBe(9);
        expect(body.error.code).toBe(-32602);
        expect(body.error.message).toContain('"arguments" of tools/call must be an object');
      }
    });

    test("a NUL in the app name is invalid_input naming the field, and nothing is created", async () => {
      const text = await refusal(client, "publish", { name: "Todo\u0000List", visibility: "private", files });
      expect(text).toContain("name: must not contain control characters");
      expect(text).toEndWith("(invalid_input)");
      expect((await callOk<{ apps: unknown[] }>(client, "list_tools")).apps).toEqual([]);
    });

    test("a direction override in the app name is refused too", async () => {
      const text = await refusal(client, "publish", { name: "abc\u202eexe.html", visibility: "private", files });
      expect(text).toContain("name: must not contain control characters");
    });

    test("a name of only spaces is invalid_input, not an app with an empty name", async () => {
      const text = await refusal(client, "publish", { name: "    ", visibility: "private", files });
      expect(text).toContain("name: must not be empty or only spaces");
      expect(text).toEndWith("(invalid_input)");
      expect((await callOk<{ apps: unknown[] }>(client, "list_tools")).apps).toEqual([]);
    });

    test("a name with spaces around it is stored trimmed", async () => {
      const done = await callOk(client, "publish", { name: "  Trimmed App  ", visibility: "private", files });
      const list = textOf(await client.callTool({ name: "list_tools", arguments: {} }));
      expect(list).toContain(`- Trimmed App (${done.address}): `);
    });

    test("a NUL in a pause reason is invalid_input naming the field", async () => {
      const text = await refusal(client, "org_app_pause", { address: "some-app", paused: true, reason: "spam\u0000" });
      expect(text).toContain("reason: must not contain control characters");
      expect(text).toEndWith("(invalid_input)");
    });

    test("a NUL in an organization's name is invalid_input naming the field", async () => {
      const text = await refusal(client, "org_setup", { action: "create", name: "Acme\u0000 Inc" });
      expect(text).toContain("name: must not contain control characters");
      expect(text).toEndWith("(invalid_input)");
      const spaces = await refusal(client, "org_setup", { action: "create", name: "   " });
      expect(spaces).toContain("name: must not be empty or only spaces");
    });

    test("a NUL in a file path is refused by the path rule", async () => {
      const text = await refusal(client, "publish", {
        name: "Paths",
        visibility: "private",
        files: [{ path: "index\u0000.html", content: "x", encoding: "utf8" }],
      });
      expect(text).toContain("files.0.path");
      expect(text).toEndWith("(invalid_input)");
    });

    // The services validate the same contract again: a call that skips the gateway gets the same answer.
    describe("in the services, without the gateway", () => {
      function claims(): CallContextClaims {
        return {
          sub: user.id,
          email: user.email,
          name: user.name,
          permissions: [],
          scope: "write",
          client: { kind: "cli", name: "test", elicitation: { form: false, url: false } },
          grant: "test-grant",
          rid: "test",
        };
      }
      async function call(service: "apps" | "orgs", tool: string, input: Record<string, unknown>): Promise<CallReply> {
        const account = await hatch.gateway.accounts.resolve(claims(), { requestId: "test", traceparent: "" });
        const ctx = signContext(
          {
            ...claims(),
            account: account.account,
            accountKind: account.accountKind,
            org: account.org,
            role: account.role,
            permissions: account.permissions,
          },
          ctxKey,
        );
        const reply = await hatch.bus.request(subjects.tool(service, tool), encodeJson({ ctx, input }), {
          timeoutMs: 10_000,
        });
        return CallReplySchema.parse(decodeJson(reply.data));
      }

      test.each([
        ["apps", "publish", { name: "   ", visibility: "private", files }, "name: must not be empty or only spaces"],
        [
          "apps",
          "publish",
          { name: "A\u0000", visibility: "private", files },
          "name: must not contain control characters",
        ],
        [
          "apps",
          "org_app_pause",
          { address: "some-app", paused: true, reason: "\u0007" },
          "reason: must not contain control characters",
        ],
        ["orgs", "org_setup", { action: "create", name: "Acme\u0000" }, "name: must not contain control characters"],
      ] as const)("%s %s refuses it with invalid_input", async (service, tool, input, message) => {
        const reply = await call(service, tool, input);
        expect(reply.ok).toBe(false);
        if (reply.ok) return;
        expect(reply.error.code).toBe("invalid_input");
        expect(reply.error.message).toContain(message);
      });
    });
  });

  describe(`inline publish and the bus's message size (${mode})`, () => {
    let hatch: TestHatch;
    let client: Client;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      const user = await userWithToken(hatch);
      client = await connectClient(hatch, user.accessToken);
    }, 60_000);
    afterAll(async () => {
      await client?.close();
      await hatch?.stop();
    });

    test("a 1.5 MB inline publish is published, or refused with limit_exceeded and the upload: true hint; never internal", async () => {
      // Whether it fits depends on the nats-server's max_payload (8 MB in compose; 1 MB is NATS's default).
      const big = page("Big") + "<!--" + "a".repeat(1_500_000) + "-->";
      const result = await client.callTool({
        name: "publish",
        arguments: {
          name: "Big App",
          visibility: "private",
          files: [{ path: "index.html", content: big, encoding: "utf8" }],
        },
      });
      if (result.isError) {
        expect(textOf(result)).toContain("upload: true");
        expect(textOf(result)).toEndWith("(limit_exceeded)");
      } else {
        expect(result.structuredContent).toMatchObject({ status: "published", version: 1 });
      }
      if (mode === "embedded") expect(result.isError).toBeFalsy();
    });

    test("inline files over the inline limit are refused with limit_exceeded and the upload: true hint", async () => {
      const files = [
        { path: "index.html", content: page("Huge"), encoding: "utf8" },
        { path: "a.txt", content: "a".repeat(2_000_000), encoding: "utf8" },
        { path: "b.bin", content: Buffer.alloc(1_200_000, 7).toString("base64"), encoding: "base64" },
      ];
      const text = await refusal(client, "publish", { name: "Huge App", visibility: "private", files });
      expect(text).toContain("inline files may hold at most 3 MB in all");
      expect(text).toContain("Call publish with upload: true instead");
      expect(text).toEndWith("(limit_exceeded)");
    });
  });

  describe(`the client's self-declared name (${mode})`, () => {
    let hatch: TestHatch;
    const logs: string[] = [];

    beforeAll(async () => {
      hatch = await startTestHatch(mode, { logWrite: (line) => logs.push(line) });
    }, 60_000);
    afterAll(async () => {
      await hatch?.stop();
    });

    test("a huge name with control characters is cut to 100 characters and cleaned: calls work, the log and the confirm page show the cut name", async () => {
      const user = await userWithToken(hatch);
      const raw = `claude\u0000-code\u202e\u001b[31m${"x".repeat(200_000)}`;
      const expected = `claude-code[31m${"x".repeat(100 - "claude-code[31m".length)}`;
      const client = await connectClient(hatch, user.accessToken, { name: raw, version: "1.0.0" });
      try {
        await callOk(client, "publish", {
          name: "Named",
          visibility: "private",
          files: [{ path: "index.html", content: page("Named"), encoding: "utf8" }],
        });
        const asked = await client.callTool({ name: "delete_tool", arguments: { address: "named" } });
        const url = (asked.structuredContent as { userAction?: { url?: string } }).userAction?.url;
        expect(url).toBeString();

        const calls = logs
          .map((line) => JSON.parse(line) as { msg?: string; service?: string; client?: string })
          .filter((l) => l.msg === "tool call" && l.service === "gateway");
        expect(calls.length).toBeGreaterThanOrEqual(2);
        for (const line of calls) expect(line.client).toBe(expected);
        expect(logs.join("\n")).not.toContain("x".repeat(101));

        const browser = new Browser((path, init) => fetch(`${hatch.baseUrl}${path}`, { ...init, redirect: "manual" }));
        expect((await browser.signIn(user.email, PASSWORD)).status).toBe(303);
        const confirm = await (await browser.get(new URL(url!).pathname)).text();
        // The page names the client the user approved (the grant's), never the name the client reports about itself.
        expect(confirm).toContain(`Hatch CLI, the AI client you connected, asks you, ${user.email}`);
        expect(confirm).not.toContain("claude-code");
        expect(confirm).not.toContain("x".repeat(101));
      } finally {
        await client.close();
      }
    });
  });

  describe(`MCP sessions per user (${mode})`, () => {
    let hatch: TestHatch;

    beforeAll(async () => {
      hatch = await startTestHatch(mode, {
        services: ["orgs"],
        gatewayConfig: { maxSessions: 4, maxSessionsPerUser: 3 },
      });
    }, 60_000);
    afterAll(async () => {
      await hatch?.stop();
    });

    // A copy keeps at most maxSessions in memory and makes room from the biggest holder's oldest; a session it closed
    // for room keeps its record (gateway/DESIGN.md) and is rebuilt on its next request, as on another copy.
    test("a user opening many sessions makes room from their own oldest; another user's session keeps working", async () => {
      const [a, b, c] = [await userWithToken(hatch), await userWithToken(hatch), await userWithToken(hatch)];
      const bob = await connectClient(hatch, b.accessToken);
      const alice: Client[] = [];
      for (let i = 0; i < 3; i++) alice.push(await connectClient(hatch, a.accessToken));
      expect(hatch.gateway.mcp.sessionCount).toBe(4);

      // The gateway is full: a newcomer's session closes the oldest of the biggest holder (alice), not bob's.
      const carol = await connectClient(hatch, c.accessToken);
      expect(await callOk(bob, "whoami")).toMatchObject({ email: b.email });
      expect(await callOk(carol, "whoami")).toMatchObject({ email: c.email });
      expect(hatch.gateway.mcp.sessionCount).toBeLessThanOrEqual(4);

      // Alice keeps opening sessions: past her cap each closes her own oldest.
      for (let i = 0; i < 6; i++) alice.push(await connectClient(hatch, a.accessToken));
      expect(hatch.gateway.mcp.sessionCount).toBeLessThanOrEqual(4);
      expect(await callOk(bob, "whoami")).toMatchObject({ email: b.email });
      expect(await callOk(carol, "whoami")).toMatchObject({ email: c.email });
      expect(await callOk(alice.at(-1)!, "whoami")).toMatchObject({ email: a.email });
      // Alice's oldest was closed for room, not ended: it is rebuilt from its record, still within the bound.
      expect(await callOk(alice[0]!, "whoami")).toMatchObject({ email: a.email });
      expect(hatch.gateway.mcp.sessionCount).toBeLessThanOrEqual(4);
      expect(await callOk(bob, "whoami")).toMatchObject({ email: b.email });

      for (const client of [bob, carol, ...alice]) await client.close().catch(() => {});
    });
  });
}
