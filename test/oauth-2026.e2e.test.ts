import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  Client,
  InsufficientScopeError,
  IssuerMismatchError,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from "@modelcontextprotocol/client";
import { eq } from "drizzle-orm";
import { Browser } from "../gateway/test/oauth-harness.ts";
import { oauthClients } from "../gateway/src/db/schema.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { userWithToken } from "./support/mcp.ts";
import { MemoryOAuthProviderV2 } from "./support/oauth-v2.ts";
import { MODES } from "./support/servers.ts";

// Issue 24 item 4: authorization as MCP 2026-07-28 asks. `iss` in every authorization response (RFC 9207) with its
// metadata flag, `scope` in the 401 and 403 challenges, Client ID Metadata Documents preferred, dynamic registration
// kept and taking `application_type`; all through the SDK v2 client's own OAuth flow.

const REDIRECT = "http://127.0.0.1:33419/callback";
const DOCUMENT_URL = "https://agent.example/hatch-client.json";

/** What the client saw over HTTP: every response's URL, status and challenge. */
interface Seen {
  url: string;
  status: number;
  challenge: string | null;
}

function recordingFetch(seen: Seen[]): typeof fetch {
  return Object.assign(
    async (input: string | URL | Request, init?: RequestInit) => {
      const response = await fetch(input, init);
      const url = input instanceof Request ? input.url : String(input);
      seen.push({ url, status: response.status, challenge: response.headers.get("www-authenticate") });
      return response;
    },
    { preconnect: fetch.preconnect },
  );
}

/** The SDK v2 client pinned to 2026-07-28 with an OAuth provider; `seen` records its HTTP. */
function clientWith(hatch: TestHatch, provider: MemoryOAuthProviderV2, seen: Seen[] = []) {
  const transport = new StreamableHTTPClientTransport(new URL(hatch.mcpUrl), {
    authProvider: provider,
    fetch: recordingFetch(seen),
  });
  const client = new Client(
    { name: "claude-code", version: "3.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  return { client, transport };
}

/**
 * The first connection of a v2 client: 401 → discovery → (metadata document or registration) → a person signs up and
 * decides on the consent page → the callback's parameters (code, state, iss) go to finishAuth → connected.
 */
async function signIn(
  hatch: TestHatch,
  provider: MemoryOAuthProviderV2,
  email: string,
  decision: "write" | "read",
  checkCallback?: (callback: URLSearchParams, transport: StreamableHTTPClientTransport) => Promise<void>,
) {
  const first = clientWith(hatch, provider);
  expect(await first.client.connect(first.transport).catch((e: unknown) => e)).toBeInstanceOf(UnauthorizedError);
  const authorizeUrl = provider.authorizationUrl!;
  const browser = new Browser((path, init) => fetch(`${hatch.baseUrl}${path}`, { ...init, redirect: "manual" }));
  expect((await browser.signUp(email, "correct horse battery", "Grace Hopper")).status).toBe(303);
  const approved = await browser.submit(authorizeUrl.pathname + authorizeUrl.search, "/oauth/authorize", { decision });
  const location = new URL(approved.headers.get("location")!);
  expect(location.origin + location.pathname).toBe(REDIRECT);
  await checkCallback?.(location.searchParams, first.transport);
  await first.transport.finishAuth(location.searchParams);
  const seen: Seen[] = [];
  const connected = clientWith(hatch, provider, seen);
  await connected.client.connect(connected.transport);
  return { authorizeUrl, callback: location.searchParams, client: connected.client, seen };
}

for (const mode of MODES) {
  describe(`Authorization as MCP 2026-07-28 asks, with the SDK v2 client (${mode})`, () => {
    let hatch: TestHatch;
    const documentFetches: string[] = [];

    beforeAll(async () => {
      // The client's metadata document is served by the test (the gateway fetches it through this function); the
      // unsafe mode only lets the test's made-up host through without a DNS answer.
      hatch = await startTestHatch(mode, {
        gatewayConfig: { allowInsecureClientMetadata: true },
        fetchClientMetadata: Object.assign(
          async (input: string | URL | Request) => {
            const url = input instanceof Request ? input.url : String(input);
            documentFetches.push(url);
            if (url !== DOCUMENT_URL) return new Response("not found", { status: 404 });
            return Response.json({
              client_id: DOCUMENT_URL,
              client_name: "Document Agent",
              redirect_uris: [REDIRECT],
              token_endpoint_auth_method: "none",
              application_type: "native",
            });
          },
          { preconnect: fetch.preconnect },
        ),
      });
    }, 60_000);
    afterAll(async () => {
      await hatch?.stop();
    });

    test("a 401 names the resource metadata and the scope to ask for; the metadata flags iss and metadata documents", async () => {
      const refused = await fetch(hatch.mcpUrl, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "server/discover", params: {} }),
      });
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toBe(
        `Bearer resource_metadata="${hatch.baseUrl}/.well-known/oauth-protected-resource/mcp", scope="read write"`,
      );
      const expired = await fetch(hatch.mcpUrl, {
        method: "POST",
        headers: { authorization: "Bearer not-a-token", "content-type": "application/json" },
        body: "{}",
      });
      expect(expired.headers.get("www-authenticate")).toStartWith(
        `Bearer resource_metadata="${hatch.baseUrl}/.well-known/oauth-protected-resource/mcp", scope="read write", error="invalid_token"`,
      );
      const metadata = (await (
        await fetch(`${hatch.baseUrl}/.well-known/oauth-authorization-server`)
      ).json()) as Record<string, unknown>;
      expect(metadata).toMatchObject({
        issuer: hatch.baseUrl,
        authorization_response_iss_parameter_supported: true,
        client_id_metadata_document_supported: true,
        registration_endpoint: `${hatch.baseUrl}/oauth/register`,
      });
    });

    test("with a metadata document the client registers nothing, the code comes back with iss, and the client checks it", async () => {
      const provider = new MemoryOAuthProviderV2(REDIRECT, "Document Agent", { clientMetadataUrl: DOCUMENT_URL });
      const { authorizeUrl, callback, client } = await signIn(
        hatch,
        provider,
        `cimd-v2-${mode}@example.com`,
        "write",
        async (params, transport) => {
          // The iss the client records from the metadata must be exactly the one in the answer: a changed or missing
          // iss is refused before the code is spent (the real answer below still works).
          for (const iss of [`${hatch.baseUrl}/`, undefined]) {
            const forged = new URLSearchParams(params);
            if (iss === undefined) forged.delete("iss");
            else forged.set("iss", iss);
            expect(await transport.finishAuth(forged).catch((e: unknown) => e)).toBeInstanceOf(IssuerMismatchError);
          }
        },
      );
      expect(authorizeUrl.searchParams.get("client_id")).toBe(DOCUMENT_URL);
      expect(authorizeUrl.searchParams.get("scope")).toBe("read write");
      expect(callback.get("iss")).toBe(hatch.baseUrl);
      expect(provider.client?.client_id).toBe(DOCUMENT_URL);
      expect(documentFetches).toContain(DOCUMENT_URL);
      const who = await client.callTool({ name: "whoami", arguments: {} });
      expect(who.structuredContent).toMatchObject({ email: `cimd-v2-${mode}@example.com` });
      const [row] = await hatch.gatewayDb.select().from(oauthClients).where(eq(oauthClients.clientId, DOCUMENT_URL));
      expect(row?.registration).toBe("metadata");
      await client.close();
    });

    test("dynamic registration still works and keeps the client's application_type", async () => {
      const provider = new MemoryOAuthProviderV2(REDIRECT, "Registered Agent");
      const { client } = await signIn(hatch, provider, `dcr-v2-${mode}@example.com`, "write");
      const clientId = provider.client!.client_id;
      expect(clientId).toStartWith("hc_");
      const [row] = await hatch.gatewayDb.select().from(oauthClients).where(eq(oauthClients.clientId, clientId));
      expect(row?.metadata).toMatchObject({ application_type: "native", redirect_uris: [REDIRECT] });
      expect((await client.callTool({ name: "whoami", arguments: {} })).isError).toBeFalsy();
      await client.close();
    });

    test("registration checks application_type against the redirect URIs", async () => {
      const register = (body: Record<string, unknown>) =>
        fetch(`${hatch.baseUrl}/oauth/register`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-forwarded-for": "192.0.2.10" },
          body: JSON.stringify({ client_name: "Typed", ...body }),
        });
      const web = await register({ application_type: "web", redirect_uris: ["https://agent.example/callback"] });
      expect(web.status).toBe(201);
      expect(await web.json()).toMatchObject({ application_type: "web" });

      const webOnLoopback = await register({ application_type: "web", redirect_uris: [REDIRECT] });
      expect(webOnLoopback.status).toBe(400);
      const refused = (await webOnLoopback.json()) as { error: string; error_description: string };
      expect(refused.error).toBe("invalid_redirect_uri");
      expect(refused.error_description).toContain('application_type "native"');

      const customScheme = await register({ application_type: "web", redirect_uris: ["cursor://anysphere/callback"] });
      expect(customScheme.status).toBe(400);

      const unknown = await register({ application_type: "desktop", redirect_uris: [REDIRECT] });
      expect(unknown.status).toBe(400);
      expect(await unknown.json()).toMatchObject({
        error: "invalid_client_metadata",
        error_description: 'application_type must be "native" or "web".',
      });

      // Without one (2025-era clients), nothing is assumed.
      const untyped = await register({ redirect_uris: [REDIRECT] });
      expect(untyped.status).toBe(201);
      expect(await untyped.json()).not.toHaveProperty("application_type");
    });

    test("a read-only grant asking to change something gets 403 insufficient_scope, and the client asks for full access", async () => {
      const provider = new MemoryOAuthProviderV2(REDIRECT, "Careful Agent");
      const { client, seen } = await signIn(hatch, provider, `reader-v2-${mode}@example.com`, "read");
      expect(provider.saved?.scope).toBe("read");
      expect((await client.callTool({ name: "whoami", arguments: {} })).isError).toBeFalsy();

      const before = provider.authorizationUrls.length;
      const stepUp = await client
        .callTool({ name: "delete_tool", arguments: { address: "nothing-here" } })
        .catch((e: unknown) => e);
      expect(stepUp).toBeInstanceOf(UnauthorizedError);
      const forbidden = seen.find((s) => s.status === 403);
      expect(forbidden?.challenge).toBe(
        `Bearer resource_metadata="${hatch.baseUrl}/.well-known/oauth-protected-resource/mcp", scope="read write", ` +
          `error="insufficient_scope", error_description="This connection was approved for read-only access, so 'delete_tool' (which changes things) was refused. Nothing was changed. To allow changes, the user approves full access when the client signs in again."`,
      );
      // The client went back to the consent page asking for write as well (step-up authorization).
      expect(provider.authorizationUrls.length).toBe(before + 1);
      expect(provider.authorizationUrl!.searchParams.get("scope")?.split(" ").sort()).toEqual(["read", "write"]);
      await client.close();
    });

    test("a client holding a read-only token without an OAuth provider gets the challenge as an error it can read", async () => {
      const reader = await userWithToken(hatch, { readOnly: true });
      const client = new Client(
        { name: "claude-code", version: "3.0.0" },
        { versionNegotiation: { mode: { pin: "2026-07-28" } } },
      );
      await client.connect(
        new StreamableHTTPClientTransport(new URL(hatch.mcpUrl), {
          requestInit: { headers: { Authorization: `Bearer ${reader.accessToken}` } },
        }),
      );
      const refused = await client
        .callTool({ name: "publish", arguments: { files: [{ path: "index.html", content: "<h1>hi</h1>" }] } })
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(InsufficientScopeError);
      expect((refused as InsufficientScopeError).requiredScope).toBe("read write");
      expect((refused as InsufficientScopeError).errorDescription).toContain(
        "'publish' (which changes things) was refused",
      );
      // Reading goes on as before.
      expect((await client.callTool({ name: "whoami", arguments: {} })).isError).toBeFalsy();
      await client.close();
    });
  });
}
