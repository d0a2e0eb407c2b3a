import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { Browser, MemoryOAuthProvider } from "../gateway/test/oauth-harness.ts";
import { oauthClients } from "../gateway/src/db/schema.ts";
import { LIMITS } from "../gateway/src/auth/throttle.ts";
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

// Issue 23 item 9: a client id that is a URL makes the gateway fetch a stranger's document. Fetches are limited per
// requester address and per document host, a document is kept only as long as its HTTP caching allows, and its client
// row is written only when someone approves it.

/** Documents that name their own URL as client_id; `?cache=` and `?age=` set those headers. Hits counted. */
function documentServer(hostname: string) {
  const hits: string[] = [];
  const server: ReturnType<typeof Bun.serve> = Bun.serve({
    port: 0,
    hostname,
    fetch(request): Response {
      const url = new URL(request.url);
      hits.push(url.pathname + url.search);
      const headers: Record<string, string> = {};
      const cache = url.searchParams.get("cache");
      if (cache) headers["cache-control"] = cache;
      const age = url.searchParams.get("age");
      if (age) headers.age = age;
      const document = {
        client_id: `http://${hostname}:${server.port}${url.pathname}${url.search}`,
        client_name: "Document Client",
        redirect_uris: [REDIRECT],
        token_endpoint_auth_method: "none",
      };
      return Response.json(document, { headers });
    },
  });
  return {
    hits,
    url: (path: string) => `http://${hostname}:${server.port}${path}`,
    stop: () => server.stop(true),
  };
}

function authorizeQuery(hatch: TestHatch, clientId: string): string {
  const query = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    code_challenge_method: "S256",
    state: "st",
    resource: hatch.mcpUrl,
  });
  return `/oauth/authorize?${query}`;
}

for (const mode of MODES) {
  describe(`Client ID Metadata Documents: fetch limits, HTTP caching, rows at consent (${mode})`, () => {
    let hatch: TestHatch;
    let docs: ReturnType<typeof documentServer>;
    let otherHost: ReturnType<typeof documentServer>;
    const perSource = LIMITS.metadataFetchPerSource.count;
    const perHost = LIMITS.metadataFetchPerHost.count;

    beforeAll(async () => {
      // Plain http on loopback needs the unsafe mode; trustProxy lets each request name its address (X-Forwarded-For).
      hatch = await startTestHatch(mode, { gatewayConfig: { allowInsecureClientMetadata: true, trustProxy: true } });
      docs = documentServer("127.0.0.1");
      otherHost = documentServer("127.0.0.2");
    }, 60_000);
    afterAll(async () => {
      docs?.stop();
      otherHost?.stop();
      await hatch?.stop();
    });

    const open = (clientId: string, from: string) =>
      fetch(`${hatch.baseUrl}${authorizeQuery(hatch, clientId)}`, {
        redirect: "manual",
        headers: { "x-forwarded-for": from },
      });
    const metadataRows = async () =>
      (await hatch.gatewayDb.select().from(oauthClients)).filter((row) => row.registration === "metadata");

    test("40 anonymous authorize requests from one address fetch at most its budget and write no client rows", async () => {
      const from = "203.0.113.40";
      const statuses: number[] = [];
      let refused: Response | undefined;
      for (let i = 0; i < 40; i++) {
        const response = await open(docs.url(`/client.json?n=${i}`), from);
        statuses.push(response.status);
        if (response.status === 429) refused ??= response;
        else await response.text();
      }
      // Each valid document sends the anonymous visitor to sign in; past the budget, a clear refusal instead.
      expect(statuses.slice(0, perSource)).toEqual(Array(perSource).fill(303));
      expect(statuses.slice(perSource)).toEqual(Array(40 - perSource).fill(429));
      expect(docs.hits.filter((h) => h.startsWith("/client.json"))).toHaveLength(perSource);
      expect(Number(refused!.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(await refused!.text()).toContain(`from your network (${perSource} an hour)`);
      expect(await metadataRows()).toEqual([]);

      // The budget is the address's: another address is served.
      const other = await open(docs.url("/client.json?n=other"), "203.0.113.41");
      expect(other.status).toBe(303);
      expect(docs.hits.filter((h) => h.startsWith("/client.json"))).toHaveLength(perSource + 1);
    });

    test("one host's documents are fetched at most its budget an hour, whoever asks", async () => {
      for (let i = 0; i < perHost; i++) {
        const from = `198.51.100.${10 + Math.floor(i / perSource)}`;
        const response = await open(otherHost.url(`/spread.json?n=${i}`), from);
        expect(response.status).toBe(303);
      }
      expect(otherHost.hits).toHaveLength(perHost);
      const fresh = "198.51.100.200";
      const refused = await open(otherHost.url("/spread.json?n=last"), fresh);
      expect(refused.status).toBe(429);
      expect(await refused.text()).toContain("127.0.0.2");
      expect(otherHost.hits).toHaveLength(perHost);
      // The same fresh address still reaches another host.
      expect((await open(docs.url("/elsewhere.json"), fresh)).status).toBe(303);
    });

    test("a document is kept as long as its Cache-Control says, and not at all with no-store", async () => {
      const from = "192.0.2.77";
      const hitsOf = (path: string) => docs.hits.filter((h) => h.startsWith(path)).length;
      const thrice = async (clientId: string) => {
        for (let i = 0; i < 3; i++) expect((await open(clientId, from)).status).toBe(303);
      };
      await thrice(docs.url(`/cached.json?cache=${encodeURIComponent("public, max-age=600")}`));
      expect(hitsOf("/cached.json")).toBe(1);
      await thrice(docs.url("/no-store.json?cache=no-store"));
      expect(hitsOf("/no-store.json")).toBe(3);
      await thrice(docs.url("/no-cache.json?cache=no-cache"));
      expect(hitsOf("/no-cache.json")).toBe(3);
      // Already as old as its max-age when it arrives (Age): stale at once.
      await thrice(docs.url(`/stale.json?cache=${encodeURIComponent("max-age=600")}&age=600`));
      expect(hitsOf("/stale.json")).toBe(3);
    });

    test("the client row is written when a signed-in person approves, not when the page is shown", async () => {
      const browser = new Browser(
        (path, init) => fetch(`${hatch.baseUrl}${path}`, { ...init, redirect: "manual" }),
        "192.0.2.90",
      );
      expect((await browser.signUp(`cimd-${mode}@example.com`)).status).toBe(303);
      const clientId = docs.url(`/approved.json?cache=${encodeURIComponent("max-age=600")}`);
      const path = authorizeQuery(hatch, clientId);
      const page = await browser.get(path);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain("Document Client");
      expect(await metadataRows()).toEqual([]);

      const approved = await browser.submit(path, "/oauth/authorize", { decision: "write" });
      expect(approved.status).toBe(303);
      expect(new URL(approved.headers.get("location")!).searchParams.get("code")).toBeTruthy();
      const rows = await metadataRows();
      expect(rows.map((r) => [r.clientId, r.name, r.redirectUris])).toEqual([
        [clientId, "Document Client", [REDIRECT]],
      ]);
    });
  });
}
