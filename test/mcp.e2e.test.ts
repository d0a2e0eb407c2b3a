import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { decodeJson, encodeJson } from "@hatch/platform";
import { deriveKey, signContext, TOOL_CONTRACTS } from "@hatch/contracts";
import { ORGS_VERSION } from "@hatch/orgs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { MAX_BODY_BYTES } from "../gateway/src/mcp/endpoint.ts";
import { startTestHatch, TEST_SECRET, type TestHatch } from "./support/hatch.ts";
import { connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

for (const mode of MODES) {
  describe(`MCP through the gateway (${mode})`, () => {
    let hatch: TestHatch;
    let alice: Awaited<ReturnType<typeof userWithToken>>;
    let client: Client;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      alice = await userWithToken(hatch, { name: "Alice Example" });
      client = await connectClient(hatch, alice.accessToken);
    }, 60_000);
    afterAll(async () => {
      await client?.close();
      await hatch?.stop();
    });

    test("tools/list offers all 29 tools with schemas and annotations", async () => {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(TOOL_CONTRACTS.map((c) => c.name));
      const publish = tools.find((t) => t.name === "publish")!;
      expect(publish.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false });
      expect(publish.inputSchema.type).toBe("object");
      const del = tools.find((t) => t.name === "delete_tool")!;
      expect(del.annotations?.destructiveHint).toBe(true);
      // Output schemas are left out of the list (test/tool-groups.e2e.test.ts holds the budget).
      expect(tools.find((t) => t.name === "whoami")!.outputSchema).toBeUndefined();
    });

    test("whoami answers from the orgs service with the personal account", async () => {
      const result = await client.callTool({ name: "whoami", arguments: {} });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual({ email: alice.email, name: "Alice Example", kind: "personal" });
      expect(textOf(result)).toContain(alice.email);
    });

    test("ChatGPT is not offered find_domain or buy_domain, and cannot call them", async () => {
      const chatgpt = await connectClient(hatch, alice.accessToken, { name: "ChatGPT", version: "1" });
      const names = (await chatgpt.listTools()).tools.map((t) => t.name);
      expect(names).toHaveLength(27);
      expect(names).not.toContain("find_domain");
      expect(names).not.toContain("buy_domain");
      const err = await chatgpt
        .callTool({ name: "buy_domain", arguments: { domain: "example.com" } })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(McpError);
      expect((err as McpError).message).toContain("Unknown tool");
      await chatgpt.close();
    });

    test("an unknown tool is a protocol error that says what to do", async () => {
      const err = await client.callTool({ name: "no_such_tool", arguments: {} }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(McpError);
      expect((err as McpError).code).toBe(-32602);
      expect((err as McpError).message).toContain("tools/list");
    });

    test("arguments that fail the schema come back as an actionable error", async () => {
      const result = await client.callTool({ name: "whoami", arguments: { surprise: 1 } });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain("Invalid arguments for whoami");
      const invite = await client.callTool({
        name: "org_invite",
        arguments: { action: "invite", emails: Array.from({ length: 51 }, (_, i) => `p${i}@example.com`) },
      });
      expect(invite.isError).toBe(true);
      expect(textOf(invite)).toContain("50");
    });

    test("a read-only grant can read but anything that changes is forbidden", async () => {
      const reader = await userWithToken(hatch, { readOnly: true });
      const ro = await connectClient(hatch, reader.accessToken);
      const who = await ro.callTool({ name: "whoami", arguments: {} });
      expect(who.isError).toBeFalsy();
      const change = await ro.callTool({ name: "org_setup", arguments: { action: "create", name: "Acme" } });
      expect(change.isError).toBe(true);
      expect(textOf(change)).toContain("read-only");
      expect(textOf(change)).toContain("(forbidden)");
      await ro.close();
    });

    test("the service refuses a bus call without a valid signed context", async () => {
      const reply = await hatch.bus.request("tools.orgs.whoami", encodeJson({ ctx: "forged.context", input: {} }), {
        timeoutMs: 2000,
      });
      expect(decodeJson(reply.data)).toMatchObject({ ok: false, error: { code: "forbidden" } });
    });

    test("the service itself refuses read-only contexts for changes and hidden tools for ChatGPT", async () => {
      const claims = {
        sub: alice.id,
        email: alice.email,
        name: "Alice Example",
        permissions: [],
        scope: "read" as const,
        client: { kind: "claude" as const, name: "claude-code", elicitation: { form: false, url: false } },
        grant: alice.grantId,
        rid: "direct-bus-call",
      };
      const key = deriveKey(TEST_SECRET, "ctx");
      const ask = async (subject: string, ctx: string, input: unknown) =>
        decodeJson((await hatch.bus.request(subject, encodeJson({ ctx, input }), { timeoutMs: 2000 })).data);
      expect(
        await ask("tools.orgs.org_setup", signContext(claims, key), { action: "create", name: "Acme" }),
      ).toMatchObject({ ok: false, error: { code: "forbidden" } });
      const chatgpt = signContext(
        {
          ...claims,
          scope: "write",
          client: { kind: "chatgpt", name: "ChatGPT", elicitation: { form: false, url: false } },
        },
        key,
      );
      expect(await ask("tools.domains.find_domain", chatgpt, { query: "example" })).toMatchObject({
        ok: false,
        error: { code: "forbidden" },
      });
      expect(await ask("tools.orgs.whoami", signContext(claims, key), {})).toMatchObject({
        ok: true,
        result: { data: { email: alice.email } },
      });
    });

    test("requests without a usable token get 401 with the resource metadata challenge", async () => {
      for (const authorization of [undefined, "Bearer not-a-jwt", "Basic abc", `Bearer ${alice.accessToken}x`]) {
        const res = await fetch(hatch.mcpUrl, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            ...(authorization ? { authorization } : {}),
          },
          body: JSON.stringify(INIT),
        });
        expect(res.status).toBe(401);
        expect(res.headers.get("www-authenticate")).toContain(
          `resource_metadata="${hatch.baseUrl}/.well-known/oauth-protected-resource/mcp"`,
        );
      }
    });

    test("a revoked grant stops working on the next call", async () => {
      const bob = await userWithToken(hatch);
      const bobClient = await connectClient(hatch, bob.accessToken);
      expect((await bobClient.callTool({ name: "whoami", arguments: {} })).isError).toBeFalsy();
      await hatch.gateway.auth.revokeGrant(bob.grantId, "user");
      const err = await bobClient.callTool({ name: "whoami", arguments: {} }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect(String(err)).toContain("revoked");
    });

    test("malformed JSON-RPC, oversized bodies, foreign hosts and origins are refused; the server stays up", async () => {
      const headers = {
        authorization: `Bearer ${alice.accessToken}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      };
      const bad = await fetch(hatch.mcpUrl, { method: "POST", headers, body: "{not json" });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { error: { code: number } }).error.code).toBe(-32700);
      const limit = Math.max(hatch.config.maxBodyBytes, MAX_BODY_BYTES);
      const huge = await fetch(hatch.mcpUrl, {
        method: "POST",
        headers,
        body: JSON.stringify({ ...INIT, pad: "x".repeat(limit) }),
      });
      expect(huge.status).toBe(413);
      // Without a Content-Length (chunked), reading stops at the limit too.
      const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
      let sent = 0;
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent > limit + chunk.byteLength) return controller.close();
          sent += chunk.byteLength;
          controller.enqueue(chunk);
        },
      });
      const chunked = await fetch(hatch.mcpUrl, { method: "POST", headers, body: stream });
      expect(chunked.status).toBe(413);
      const noSession = await fetch(hatch.mcpUrl, {
        method: "POST",
        headers,
        body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
      });
      expect(noSession.status).toBe(400);
      const evilOrigin = await fetch(hatch.mcpUrl, {
        method: "POST",
        headers: { ...headers, origin: "https://evil.example" },
        body: JSON.stringify(INIT),
      });
      expect(evilOrigin.status).toBe(403);
      const evilHost = await fetch(hatch.mcpUrl, {
        method: "POST",
        headers: { ...headers, host: "evil.example" },
        body: JSON.stringify(INIT),
      });
      expect(evilHost.status).toBe(403);
      expect((await client.callTool({ name: "whoami", arguments: {} })).isError).toBeFalsy();
    });

    test("a session answers only the user who opened it, and DELETE ends it", async () => {
      const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
      const open = await fetch(hatch.mcpUrl, {
        method: "POST",
        headers: { ...headers, authorization: `Bearer ${alice.accessToken}` },
        body: JSON.stringify(INIT),
      });
      expect(open.status).toBe(200);
      const sessionId = open.headers.get("mcp-session-id")!;
      expect(sessionId).toBeTruthy();
      await open.text();
      const mallory = await userWithToken(hatch);
      const list = JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/list" });
      const stolen = await fetch(hatch.mcpUrl, {
        method: "POST",
        headers: {
          ...headers,
          authorization: `Bearer ${mallory.accessToken}`,
          "mcp-session-id": sessionId,
          "mcp-protocol-version": "2025-11-25",
        },
        body: list,
      });
      expect(stolen.status).toBe(404);
      const own = {
        ...headers,
        authorization: `Bearer ${alice.accessToken}`,
        "mcp-session-id": sessionId,
        "mcp-protocol-version": "2025-11-25",
      };
      const notRpc = await fetch(hatch.mcpUrl, {
        method: "POST",
        headers: own,
        body: JSON.stringify({ hello: "world" }),
      });
      expect(notRpc.status).toBe(400);
      expect(((await notRpc.json()) as { error: { code: number } }).error.code).toBeLessThan(-32000);
      const ended = await fetch(hatch.mcpUrl, { method: "DELETE", headers: own });
      expect(ended.status).toBe(200);
      const after = await fetch(hatch.mcpUrl, { method: "POST", headers: own, body: list });
      expect(after.status).toBe(404);
    });

    test("a session answers only the grant that opened it: another token of the same user is refused", async () => {
      // Issue 23 item 10: a read-only token must not drive a session opened with full access, nor the other way round.
      const full = await hatch.gateway.auth.issueTokenForScript({ email: alice.email });
      const readOnly = await hatch.gateway.auth.issueTokenForScript({ email: alice.email, readOnly: true });
      /** The SDK's client whose bearer token can be swapped mid-session (the session id stays). */
      const clientWith = async (token: string) => {
        const bearer = { token };
        const transport = new StreamableHTTPClientTransport(new URL(hatch.mcpUrl), {
          fetch: (url, init) => {
            const headers = new Headers(init?.headers);
            headers.set("authorization", `Bearer ${bearer.token}`);
            return fetch(url, { ...init, headers });
          },
        });
        const sdk = new Client({ name: "claude-code", version: "2.0.0" }, { capabilities: {} });
        await sdk.connect(transport);
        return { sdk, bearer, transport };
      };

      for (const [opener, other] of [
        [full, readOnly],
        [readOnly, full],
      ] as const) {
        const { sdk, bearer, transport } = await clientWith(opener.accessToken);
        expect((await sdk.callTool({ name: "whoami", arguments: {} })).isError).toBeFalsy();
        bearer.token = other.accessToken;
        const refused = await sdk.callTool({ name: "whoami", arguments: {} }).catch((e: unknown) => e);
        expect(refused).toBeInstanceOf(StreamableHTTPError);
        expect((refused as StreamableHTTPError).code).toBe(404);
        expect(String(refused)).toContain("Session not found");
        // The opener's own token still drives it.
        bearer.token = opener.accessToken;
        expect((await sdk.callTool({ name: "whoami", arguments: {} })).isError).toBeFalsy();
        await transport.terminateSession();
        await sdk.close();
      }
    });

    test("healthz is 200 while every service answers", async () => {
      const res = await fetch(`${hatch.baseUrl}/healthz`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { services: Record<string, { ok: boolean; version?: string }> };
      expect(Object.keys(body.services).sort()).toEqual(["apps", "billing", "domains", "orgs"]);
      expect(body.services.orgs?.version).toBe(ORGS_VERSION);
    });

    test("a service that is down gives a clear unavailable error, never a hang; healthz says which", async () => {
      await hatch.stopService("orgs");
      hatch.gateway.accounts.drop(alice.id);
      const result = await client.callTool({ name: "whoami", arguments: {} });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain("orgs service is not answering");
      expect(textOf(result)).toContain("(unavailable)");
      const health = await fetch(`${hatch.baseUrl}/healthz`);
      expect(health.status).toBe(503);
      expect(((await health.json()) as { services: Record<string, { ok: boolean }> }).services.orgs?.ok).toBe(false);
    });
  });
}
