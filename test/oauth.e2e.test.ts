import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { Browser, MemoryOAuthProvider } from "../gateway/test/oauth-harness.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { textOf } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

const REDIRECT = "http://127.0.0.1:33418/callback";

/** A person's browser against the running gateway: real HTTP, cookies kept, redirects not followed. */
function browserFor(hatch: TestHatch): Browser {
  return new Browser((path, init) => fetch(`${hatch.baseUrl}${path}`, { ...init, redirect: "manual" }));
}

/** The whole first connection: 401 → discovery → registration → sign-up → consent → code exchange. */
async function connectWithOAuth(hatch: TestHatch, email: string, decision: "write" | "read") {
  const provider = new MemoryOAuthProvider(REDIRECT, "E2E Agent");
  const first = new StreamableHTTPClientTransport(new URL(hatch.mcpUrl), { authProvider: provider });
  const client = new Client({ name: "claude-code", version: "2.0.0" });
  const refused = await client.connect(first).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(UnauthorizedError);
  const authorizeUrl = provider.authorizationUrl!;
  expect(authorizeUrl.searchParams.get("resource")).toBe(hatch.mcpUrl);
  expect(provider.client?.client_id).toBeTruthy();

  const browser = browserFor(hatch);
  expect((await browser.signUp(email, "correct horse battery", "Ada Lovelace")).status).toBe(303);
  const consentPage = await (await browser.get(authorizeUrl.pathname + authorizeUrl.search)).text();
  expect(consentPage).toContain("E2E Agent");
  expect(consentPage).toContain("127.0.0.1");
  const approved = await browser.submit(authorizeUrl.pathname + authorizeUrl.search, "/oauth/authorize", { decision });
  const location = new URL(approved.headers.get("location")!);
  expect(location.origin + location.pathname).toBe(REDIRECT);
  await first.finishAuth(location.searchParams.get("code")!);

  const connected = new Client({ name: "claude-code", version: "2.0.0" });
  await connected.connect(new StreamableHTTPClientTransport(new URL(hatch.mcpUrl), { authProvider: provider }));
  return { provider, client: connected, browser };
}

async function refresh(hatch: TestHatch, provider: MemoryOAuthProvider, refreshToken: string): Promise<Response> {
  return fetch(`${hatch.baseUrl}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "refresh_token",
      refresh_token: refreshToken,
      client_id: provider.client!.client_id,
      resource: hatch.mcpUrl,
    }),
  });
}

for (const mode of MODES) {
  describe(`OAuth sign-in to MCP with the SDK client (${mode})`, () => {
    let hatch: TestHatch;
    beforeAll(async () => {
      hatch = await startTestHatch(mode);
    }, 60_000);
    afterAll(async () => {
      await hatch?.stop();
    });

    test("discovery from the 401, registration, sign-up, consent, PKCE exchange, then tools/list and whoami", async () => {
      const { client } = await connectWithOAuth(hatch, "ada@example.com", "write");
      expect((await client.listTools()).tools).toHaveLength(29);
      const who = await client.callTool({ name: "whoami", arguments: {} });
      expect(who.structuredContent).toEqual({ email: "ada@example.com", name: "Ada Lovelace", kind: "personal" });
      await client.close();
    });

    test("refresh tokens rotate; presenting a used one revokes the grant", async () => {
      const { provider, client } = await connectWithOAuth(hatch, "rotate@example.com", "write");
      const original = provider.saved!.refresh_token!;
      const rotated = await refresh(hatch, provider, original);
      expect(rotated.status).toBe(200);
      const next = (await rotated.json()) as OAuthTokens;
      expect(next.refresh_token).not.toBe(original);
      provider.saveTokens(next);
      expect((await client.callTool({ name: "whoami", arguments: {} })).isError).toBeFalsy();

      const replay = await refresh(hatch, provider, original);
      expect(replay.status).toBe(400);
      expect(((await replay.json()) as { error: string }).error).toBe("invalid_grant");
      // The whole grant is gone: the newest refresh token and the live access token both stop working.
      expect((await refresh(hatch, provider, next.refresh_token!)).status).toBe(400);
      const res = await fetch(hatch.mcpUrl, {
        method: "POST",
        headers: { authorization: `Bearer ${next.access_token}`, "content-type": "application/json" },
        body: "{}",
      });
      expect(res.status).toBe(401);
    });

    test("revoking on the Tokens page takes effect on the next call", async () => {
      const { client, browser, provider } = await connectWithOAuth(hatch, "revoke@example.com", "write");
      expect((await client.callTool({ name: "whoami", arguments: {} })).isError).toBeFalsy();
      const page = await (await browser.get("/dashboard/tokens")).text();
      expect(page).toContain("E2E Agent");
      // Revoke asks first (its own page, whose form does it).
      const grantId = /href="\/dashboard\/tokens\/revoke\?grant=([^"]+)"/.exec(page)?.[1];
      expect(grantId).toBeTruthy();
      const question = `/dashboard/tokens/revoke?grant=${grantId}`;
      expect(await (await browser.get(question)).text()).toContain("Revoke E2E Agent?");
      expect(
        (await browser.submit(question, "/dashboard/tokens/revoke", { grant_id: decodeURIComponent(grantId!) })).status,
      ).toBe(303);
      const direct = await fetch(hatch.mcpUrl, {
        method: "POST",
        headers: { authorization: `Bearer ${provider.saved!.access_token}`, "content-type": "application/json" },
        body: "{}",
      });
      expect(direct.status).toBe(401);
      expect(direct.headers.get("www-authenticate")).toContain('error="invalid_token"');
      // The client's next call fails too: its token is refused and the refresh it then tries is refused.
      const err = await client.callTool({ name: "whoami", arguments: {} }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect(String(err)).toMatch(/refresh token is not valid|revoked/);
    });

    test("a read-only approval reads but cannot change anything", async () => {
      const { client } = await connectWithOAuth(hatch, "reader@example.com", "read");
      expect((await client.callTool({ name: "whoami", arguments: {} })).isError).toBeFalsy();
      const change = await client.callTool({
        name: "publish",
        arguments: { files: [{ path: "index.html", content: "<h1>hi</h1>", encoding: "utf8" }] },
      });
      expect(change.isError).toBe(true);
      expect(textOf(change)).toContain("read-only");
      await client.close();
    });
  });
}
