import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  BASE,
  MCP,
  REDIRECT,
  authorizePath,
  connectClient,
  consent,
  createHarness,
  registerClient,
  registerClientId,
  tokenRequest,
  type Harness,
} from "./oauth-harness.ts";
import { pkcePair } from "./support.ts";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
}, 60_000);
afterAll(async () => {
  await h.close();
});

describe("metadata", () => {
  test("protected resource metadata at both paths", async () => {
    for (const path of ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]) {
      const response = await h.request(path);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({
        resource: MCP,
        authorization_servers: [BASE],
        scopes_supported: ["read", "write"],
        bearer_methods_supported: ["header"],
        resource_name: "Hatch",
      });
    }
  });

  test("authorization server metadata, also as openid-configuration", async () => {
    const response = await h.request("/.well-known/oauth-authorization-server");
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      issuer: BASE,
      authorization_endpoint: `${BASE}/oauth/authorize`,
      token_endpoint: `${BASE}/oauth/token`,
      registration_endpoint: `${BASE}/oauth/register`,
      revocation_endpoint: `${BASE}/oauth/revoke`,
      response_types_supported: ["code"],
      grant_types_supported: ["authorization_code", "refresh_token"],
      code_challenge_methods_supported: ["S256"],
      token_endpoint_auth_methods_supported: ["none"],
      revocation_endpoint_auth_methods_supported: ["none"],
      client_id_metadata_document_supported: true,
      scopes_supported: ["read", "write"],
    });
    expect(await (await h.request("/.well-known/openid-configuration")).json()).toEqual(body);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
  });
});

describe("dynamic client registration", () => {
  test("registers a public client without a secret", async () => {
    const response = await registerClient(h, {
      client_name: "Claude",
      redirect_uris: [REDIRECT, "cursor://anysphere.cursor-retrieval/oauth/callback"],
    });
    expect(response.status).toBe(201);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      client_name: "Claude",
      redirect_uris: [REDIRECT, "cursor://anysphere.cursor-retrieval/oauth/callback"],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    });
    expect(typeof body.client_id).toBe("string");
    expect(typeof body.client_id_issued_at).toBe("number");
    expect(body.client_secret).toBeUndefined();
  });

  test.each([
    ["javascript:alert(1)"],
    ["data:text/html,hi"],
    ["file:///etc/passwd"],
    ["http://evil.example/callback"],
    ["https://app.example/cb#fragment"],
    ["not a url"],
  ])("refuses redirect URI %s", async (uri) => {
    const response = await registerClient(h, { client_name: "Bad", redirect_uris: [uri] });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toBe("invalid_redirect_uri");
  });

  test("refuses missing redirect URIs and client secrets", async () => {
    const missing = await registerClient(h, { client_name: "None" });
    expect(((await missing.json()) as { error: string }).error).toBe("invalid_redirect_uri");
    const secret = await registerClient(h, {
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: "client_secret_basic",
    });
    expect(secret.status).toBe(400);
    expect(((await secret.json()) as { error: string }).error).toBe("invalid_client_metadata");
  });
});

describe("authorization code flow", () => {
  test("sign up, sign out, sign in through authorize, consent, exchange, authenticate", async () => {
    const browser = h.browser();
    const signedUp = await browser.signUp("flow@example.com", "correct horse battery", "Flow User");
    expect(signedUp.status).toBe(303);
    expect((await browser.post("/signout", { csrf: await csrfFromLanding(browser) })).status).toBe(303);

    const clientId = await registerClientId(h, "Flow Client");
    const { verifier, challenge } = pkcePair();
    const path = authorizePath(clientId, challenge);
    const toSignIn = await browser.get(path);
    expect(toSignIn.status).toBe(303);
    const signInUrl = new URL(toSignIn.headers.get("location") ?? "", BASE);
    expect(signInUrl.pathname).toBe("/signin");
    const back = await browser.signIn(
      "flow@example.com",
      "correct horse battery",
      signInUrl.searchParams.get("next") ?? "",
    );
    const backTo = new URL(back.headers.get("location") ?? "", BASE);
    expect(backTo.pathname).toBe("/oauth/authorize");
    expect(Object.fromEntries(backTo.searchParams)).toEqual(Object.fromEntries(new URL(path, BASE).searchParams));

    const page = await (await browser.get(path)).text();
    expect(page).toContain("Flow Client");
    expect(page).toContain("127.0.0.1:8976");
    const location = await consent(browser, path);
    expect(location.origin + location.pathname).toBe(REDIRECT);
    expect(location.searchParams.get("state")).toBe("st-123");
    expect(location.searchParams.get("iss")).toBe(BASE);
    const code = location.searchParams.get("code") ?? "";

    const response = await tokenRequest(h, {
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      client_id: clientId,
      redirect_uri: REDIRECT,
      resource: MCP,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const tokens = (await response.json()) as {
      access_token: string;
      refresh_token: string;
      scope: string;
      token_type: string;
    };
    expect(tokens).toMatchObject({ token_type: "Bearer", scope: "read write" });
    const claims = JSON.parse(Buffer.from(tokens.access_token.split(".")[1] ?? "", "base64url").toString());
    expect(claims).toMatchObject({ iss: BASE, aud: MCP, cid: clientId, scope: "read write" });

    const result = await h.auth.authenticate(`Bearer ${tokens.access_token}`);
    expect(result.ok).toBe(true);
    if (result.ok)
      expect(result.identity).toMatchObject({
        email: "flow@example.com",
        name: "Flow User",
        clientId,
        clientName: "Flow Client",
        scope: "write",
      });
    assertNoSecretsLogged([code, tokens.access_token, tokens.refresh_token, verifier, "correct horse battery"]);
  });

  test("a wrong PKCE verifier is refused; the right one still works", async () => {
    const browser = await signedIn("pkce@example.com");
    const clientId = await registerClientId(h);
    const { verifier, challenge } = pkcePair();
    const code = (await consent(browser, authorizePath(clientId, challenge))).searchParams.get("code") ?? "";
    const base = { grant_type: "authorization_code", code, client_id: clientId, redirect_uri: REDIRECT };
    const wrong = await tokenRequest(h, { ...base, code_verifier: pkcePair().verifier });
    expect(wrong.status).toBe(400);
    expect(((await wrong.json()) as { error: string }).error).toBe("invalid_grant");
    expect((await tokenRequest(h, { ...base, code_verifier: verifier })).status).toBe(200);
  });

  test("plain PKCE and a missing challenge go back to the client as errors", async () => {
    const browser = await signedIn("plain@example.com");
    const clientId = await registerClientId(h);
    const plain = await browser.get(authorizePath(clientId, pkcePair().challenge, { code_challenge_method: "plain" }));
    expect(new URL(plain.headers.get("location") ?? "").searchParams.get("error")).toBe("invalid_request");
    const missing = await browser.get(authorizePath(clientId, "").replace("code_challenge=&", ""));
    expect(new URL(missing.headers.get("location") ?? "").searchParams.get("error")).toBe("invalid_request");
  });

  test("an unregistered redirect URI gets an error page, never a redirect", async () => {
    const browser = await signedIn("redirect@example.com");
    const clientId = await registerClientId(h);
    const response = await browser.get(
      authorizePath(clientId, pkcePair().challenge, { redirect_uri: "https://evil.example/cb" }),
    );
    expect(response.status).toBe(400);
    expect(response.headers.get("location")).toBeNull();
    expect(await response.text()).toContain("did not register");
    const unknown = await browser.get(authorizePath("hc_nope", pkcePair().challenge));
    expect(unknown.status).toBe(400);
    expect(unknown.headers.get("location")).toBeNull();
  });

  test("a wrong resource is refused on authorize and on the token endpoint", async () => {
    const browser = await signedIn("resource@example.com");
    const clientId = await registerClientId(h);
    const { verifier, challenge } = pkcePair();
    const refused = await browser.get(authorizePath(clientId, challenge, { resource: "https://other.example/mcp" }));
    const error = new URL(refused.headers.get("location") ?? "");
    expect(error.searchParams.get("error")).toBe("invalid_target");
    expect(error.searchParams.get("state")).toBe("st-123");
    // RFC 9207: error responses name the issuer too (MCP 2026-07-28 clients check it before reading the error).
    expect(error.searchParams.get("iss")).toBe(BASE);
    const code = (await consent(browser, authorizePath(clientId, challenge))).searchParams.get("code") ?? "";
    const response = await tokenRequest(h, {
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      client_id: clientId,
      redirect_uri: REDIRECT,
      resource: `${BASE}/other`,
    });
    expect(((await response.json()) as { error: string }).error).toBe("invalid_target");
  });

  test("reusing a code is refused and revokes what the first use got", async () => {
    const browser = await signedIn("reuse@example.com");
    const clientId = await registerClientId(h);
    const { verifier, challenge } = pkcePair();
    const code = (await consent(browser, authorizePath(clientId, challenge))).searchParams.get("code") ?? "";
    const form = {
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      client_id: clientId,
      redirect_uri: REDIRECT,
    };
    const first = (await (await tokenRequest(h, form)).json()) as { access_token: string };
    expect((await h.auth.authenticate(`Bearer ${first.access_token}`)).ok).toBe(true);
    const second = await tokenRequest(h, form);
    expect(((await second.json()) as { error: string }).error).toBe("invalid_grant");
    expect((await h.auth.authenticate(`Bearer ${first.access_token}`)).ok).toBe(false);
  });

  test("deny sends access_denied; read-only consent gives scope read", async () => {
    const browser = await signedIn("readonly@example.com");
    const clientId = await registerClientId(h);
    const denied = await consent(browser, authorizePath(clientId, pkcePair().challenge), "deny");
    expect(denied.searchParams.get("error")).toBe("access_denied");
    expect(denied.searchParams.get("iss")).toBe(BASE);
    const { tokens } = await connectClient(h, browser, "read");
    expect(tokens.scope).toBe("read");
    const result = await h.auth.authenticate(`Bearer ${tokens.access_token}`);
    expect(result.ok && result.identity.scope).toBe("read");
  });

  test("forms without a CSRF token, or from another origin, get 403", async () => {
    const browser = h.browser();
    await browser.get("/signup");
    const noToken = await browser.post("/signup", { email: "csrf@example.com", password: "long enough pw", name: "C" });
    expect(noToken.status).toBe(403);
    const signedUp = await signedIn("csrf2@example.com");
    const csrf = await csrfFromLanding(signedUp);
    const foreign = await signedUp.post("/signout", { csrf }, { origin: "https://evil.example" });
    expect(foreign.status).toBe(403);
    const clientId = await registerClientId(h);
    const page = await (await signedUp.get(authorizePath(clientId, pkcePair().challenge))).text();
    expect(page).toContain("Allow full access");
    const consentNoToken = await signedUp.post("/oauth/authorize", { decision: "write", client_id: clientId });
    expect(consentNoToken.status).toBe(403);
  });

  test("sign-up refuses a short password and a taken email; sign-in ignores an off-site next", async () => {
    const browser = h.browser();
    const short = await browser.signUp("short@example.com", "short");
    expect(short.status).toBe(400);
    expect(await short.text()).toContain("at least 8 characters");
    await browser.signUp("taken@example.com");
    const again = await h.browser().signUp("TAKEN@example.com");
    expect(await again.text()).toContain("already exists");
    const offsite = await h.browser().signIn("taken@example.com", "correct horse battery", "//evil.example/x");
    expect(offsite.headers.get("location")).toBe("/dashboard");
    const wrong = await h.browser().signIn("taken@example.com", "wrong password");
    expect(wrong.status).toBe(401);
  });

  test("oversized bodies get 413", async () => {
    const body = "a=" + "x".repeat(h.config.maxBodyBytes + 10);
    const response = await h.request("/oauth/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body,
    });
    expect(response.status).toBe(413);
  });
});

async function signedIn(email: string) {
  const browser = h.browser();
  const response = await browser.signUp(email);
  if (response.status !== 303) throw new Error(`sign-up failed: ${response.status}`);
  return browser;
}

async function csrfFromLanding(browser: ReturnType<Harness["browser"]>): Promise<string> {
  const page = await (await browser.get("/")).text();
  return /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? "";
}

function assertNoSecretsLogged(secrets: string[]) {
  const all = h.logs.join("\n");
  for (const secret of secrets) expect(all.includes(secret)).toBe(false);
}
