import { afterAll, beforeAll, expect, test } from "bun:test";
import { auth } from "@modelcontextprotocol/sdk/client/auth.js";
import { BASE, MCP, MemoryOAuthProvider, REDIRECT, createHarness, type Harness } from "./oauth-harness.ts";

// The MCP SDK's own client drives discovery, dynamic registration, PKCE, code exchange and refresh against
// our routes: if the SDK accepts our metadata and answers, real MCP clients built on it will too.

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
  await h.auth.createUser({ email: "sdk@example.com", password: "correct horse battery", name: "SDK User" });
}, 60_000);
afterAll(async () => {
  await h.close();
});

test("the MCP SDK client completes discovery, registration, code exchange and refresh", async () => {
  const fetchFn = (url: string | URL, init?: RequestInit) =>
    h.request(new URL(url).pathname + new URL(url).search, init);
  const provider = new MemoryOAuthProvider(REDIRECT, "SDK Client");
  expect(await auth(provider, { serverUrl: MCP, fetchFn })).toBe("REDIRECT");
  const authorizationUrl = provider.authorizationUrl;
  if (!authorizationUrl) throw new Error("the SDK did not start authorization");
  expect(authorizationUrl.origin).toBe(BASE);
  expect(authorizationUrl.searchParams.get("resource")).toBe(MCP);
  expect(authorizationUrl.searchParams.get("code_challenge_method")).toBe("S256");

  const browser = h.browser();
  await browser.signIn("sdk@example.com", "correct horse battery");
  const consent = await browser.submit(authorizationUrl.pathname + authorizationUrl.search, "/oauth/authorize", {
    decision: "write",
  });
  const code = new URL(consent.headers.get("location") ?? "").searchParams.get("code") ?? "";
  expect(await auth(provider, { serverUrl: MCP, authorizationCode: code, fetchFn })).toBe("AUTHORIZED");
  const first = provider.saved;
  expect((await h.auth.authenticate(`Bearer ${first?.access_token}`)).ok).toBe(true);

  // With tokens saved, auth() refreshes them (rotation: a new refresh token every time).
  expect(await auth(provider, { serverUrl: MCP, fetchFn })).toBe("AUTHORIZED");
  expect(provider.saved?.refresh_token).toBeDefined();
  expect(provider.saved?.refresh_token).not.toBe(first?.refresh_token);
  expect((await h.auth.authenticate(`Bearer ${provider.saved?.access_token}`)).ok).toBe(true);
});
