import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { jwt } from "@elysiajs/jwt";
import { createLogger } from "@hatch/platform";
import { deriveKey } from "@hatch/contracts";
import { eq } from "drizzle-orm";
import { createAuth } from "../src/auth/index.ts";
import { gatewayConfig } from "../src/config.ts";
import { grants } from "../src/db/schema.ts";
import {
  BASE,
  MCP,
  authorizePath,
  connectClient,
  consent,
  createHarness,
  tokenRequest,
  type Browser,
  type Harness,
} from "./oauth-harness.ts";
import { csrfOf, pkcePair } from "./support.ts";

const CHALLENGE = `Bearer resource_metadata="${BASE}/.well-known/oauth-protected-resource/mcp", scope="read write"`;

let h: Harness;
let browser: Browser;
beforeAll(async () => {
  h = await createHarness();
  await h.auth.createUser({ email: "tokens@example.com", password: "correct horse battery", name: "Token User" });
  browser = h.browser();
  await browser.signIn("tokens@example.com", "correct horse battery");
}, 60_000);
afterAll(async () => {
  await h.close();
});

async function expectRefused(authorization: string | null, withError: boolean) {
  const result = await h.auth.authenticate(authorization);
  expect(result.ok).toBe(false);
  if (result.ok) return;
  expect(result.status).toBe(401);
  if (withError) expect(result.wwwAuthenticate).toStartWith(`${CHALLENGE}, error="invalid_token", error_description="`);
  else expect(result.wwwAuthenticate).toBe(CHALLENGE);
}

describe("bearer verification", () => {
  test("a script token works and carries the identity", async () => {
    const issued = await h.auth.issueTokenForScript({ email: "tokens@example.com", readOnly: true });
    const result = await h.auth.authenticate(`Bearer ${issued.accessToken}`);
    expect(result.ok && result.identity).toMatchObject({
      email: "tokens@example.com",
      clientId: "hatch-cli",
      clientName: "Hatch CLI",
      scope: "read",
      grantId: issued.grantId,
    });
  });

  test("missing and malformed tokens", async () => {
    await expectRefused(null, false);
    await expectRefused("Basic dXNlcjpwYXNz", false);
    await expectRefused("Bearer not-a-jwt", true);
    await expectRefused("Bearer a.b.c", true);
  });

  test("an expired token", async () => {
    const issued = await h.auth.issueTokenForScript({ email: "tokens@example.com", ttlSeconds: 60 });
    expect((await h.auth.authenticate(`Bearer ${issued.accessToken}`)).ok).toBe(true);
    h.clock.now += 61_000;
    try {
      await expectRefused(`Bearer ${issued.accessToken}`, true);
    } finally {
      h.clock.now -= 61_000;
    }
  });

  test("a token for another audience, and one signed with another secret", async () => {
    const signer = jwt({ secret: deriveKey(h.config.secret, "access-token") }).decorator.jwt;
    const claims = {
      iss: BASE,
      sub: "usr_x",
      gid: "gr_x",
      cid: "c",
      jti: "j",
      scope: "read write",
      exp: Math.floor(Date.now() / 1000) + 600,
    };
    await expectRefused(`Bearer ${await signer.sign({ ...claims, aud: "https://other.example/mcp" })}`, true);

    const other = createAuth({
      config: gatewayConfig({ secret: "y".repeat(40), port: 3000 }),
      db: h.database.db,
      logger: createLogger({ level: "silent" }),
    });
    const foreign = await other.issueTokenForScript({ email: "tokens@example.com" });
    await expectRefused(`Bearer ${foreign.accessToken}`, true);
  });

  test("revoking takes effect on the next call, even with the grant cached", async () => {
    const issued = await h.auth.issueTokenForScript({ email: "tokens@example.com" });
    expect((await h.auth.authenticate(`Bearer ${issued.accessToken}`)).ok).toBe(true);
    await h.auth.revokeGrant(issued.grantId, "admin");
    await expectRefused(`Bearer ${issued.accessToken}`, true);
  });

  test("a revocation made by another instance lands on forgetGrant", async () => {
    const issued = await h.auth.issueTokenForScript({ email: "tokens@example.com" });
    expect((await h.auth.authenticate(`Bearer ${issued.accessToken}`)).ok).toBe(true);
    const otherInstance = createAuth({
      config: h.config,
      db: h.database.db,
      logger: createLogger({ level: "silent" }),
    });
    await otherInstance.revokeGrant(issued.grantId, "user");
    // Still cached here (≤ 5 s) until the bus event arrives.
    expect((await h.auth.authenticate(`Bearer ${issued.accessToken}`)).ok).toBe(true);
    h.auth.forgetGrant(issued.grantId);
    await expectRefused(`Bearer ${issued.accessToken}`, true);
  });

  test("last use is recorded, then again a minute after that write, whatever uses came between", async () => {
    const issued = await h.auth.issueTokenForScript({ email: "tokens@example.com" });
    const lastUsed = async () => {
      const [row] = await h.database.db
        .select({ lastUsedAt: grants.lastUsedAt })
        .from(grants)
        .where(eq(grants.id, issued.grantId));
      return row?.lastUsedAt?.getTime() ?? null;
    };
    /** The write is off the request path: wait for it (never for how fast it comes). */
    const recorded = async (at: number) => {
      for (let tries = 0; tries < 800 && (await lastUsed()) !== at; tries++) await Bun.sleep(25);
      return lastUsed();
    };
    const start = h.clock.now;
    await h.auth.authenticate(`Bearer ${issued.accessToken}`);
    expect(await recorded(start)).toBe(start);
    // A use half a minute later does not start the minute again: the one a minute after the first write is written.
    h.clock.now = start + 30_000;
    await h.auth.authenticate(`Bearer ${issued.accessToken}`);
    h.clock.now = start + 61_000;
    await h.auth.authenticate(`Bearer ${issued.accessToken}`);
    expect(await recorded(start + 61_000)).toBe(start + 61_000);
  }, 60_000);
});

describe("refresh tokens", () => {
  test("rotate on use; a used one presented again revokes the grant", async () => {
    const { clientId, tokens } = await connectClient(h, browser);
    const refresh = (token: string) =>
      tokenRequest(h, { grant_type: "refresh_token", refresh_token: token, client_id: clientId, resource: MCP });
    const second = (await (await refresh(tokens.refresh_token)).json()) as {
      access_token: string;
      refresh_token: string;
    };
    expect(second.refresh_token).not.toBe(tokens.refresh_token);
    const third = (await (await refresh(second.refresh_token)).json()) as {
      access_token: string;
      refresh_token: string;
    };
    expect((await h.auth.authenticate(`Bearer ${third.access_token}`)).ok).toBe(true);

    const replay = await refresh(tokens.refresh_token);
    expect(replay.status).toBe(400);
    expect(((await replay.json()) as { error: string }).error).toBe("invalid_grant");
    await expectRefused(`Bearer ${third.access_token}`, true);
    expect((await refresh(third.refresh_token)).status).toBe(400);
  });

  test("a read-only grant cannot be widened on refresh", async () => {
    const { clientId, tokens } = await connectClient(h, browser, "read");
    const response = await tokenRequest(h, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: clientId,
      scope: "read write",
    });
    expect(((await response.json()) as { error: string }).error).toBe("invalid_scope");
  });
});

describe("revocation endpoint", () => {
  const revoke = (form: Record<string, string>) =>
    h.request("/oauth/revoke", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(form).toString(),
    });

  test("revoking a refresh token ends the grant", async () => {
    const { tokens } = await connectClient(h, browser);
    expect((await revoke({ token: tokens.refresh_token, token_type_hint: "refresh_token" })).status).toBe(200);
    await expectRefused(`Bearer ${tokens.access_token}`, true);
  });

  test("revoking an access token ends the grant; unknown tokens still get 200", async () => {
    const { tokens } = await connectClient(h, browser);
    expect((await revoke({ token: tokens.access_token, token_type_hint: "access_token" })).status).toBe(200);
    await expectRefused(`Bearer ${tokens.access_token}`, true);
    expect((await revoke({ token: "whatever" })).status).toBe(200);
  });
});

describe("tokens page", () => {
  test("lists connected clients and revokes one", async () => {
    const { tokens } = await connectClient(h, browser, "read");
    const page = await (await browser.get("/dashboard/tokens")).text();
    expect(page).toContain("Test Client");
    expect(page).toContain("Read-only");
    const before = await h.auth.authenticate(`Bearer ${tokens.access_token}`);
    if (!before.ok) throw new Error("the new token should work");
    expect(page).toContain(`/dashboard/tokens/revoke?grant=${before.identity.grantId}`);
    const response = await browser.post("/dashboard/tokens/revoke", {
      csrf: csrfOf(page),
      grant_id: before.identity.grantId,
    });
    expect(response.status).toBe(303);
    await expectRefused(`Bearer ${tokens.access_token}`, true);
    expect(await (await browser.get("/dashboard/tokens")).text()).not.toContain(before.identity.grantId);
  });

  test("another user's grant id is ignored", async () => {
    const { tokens } = await connectClient(h, browser);
    const mine = await h.auth.authenticate(`Bearer ${tokens.access_token}`);
    const stranger = h.browser();
    await stranger.signUp("stranger@example.com");
    const page = await (await stranger.get("/dashboard/tokens")).text();
    await stranger.post("/dashboard/tokens/revoke", {
      csrf: csrfOf(page),
      grant_id: mine.ok ? mine.identity.grantId : "",
    });
    expect((await h.auth.authenticate(`Bearer ${tokens.access_token}`)).ok).toBe(true);
  });

  test("signed out, the page sends you to sign in", async () => {
    const response = await h.browser().get("/dashboard/tokens");
    expect(response.headers.get("location")).toBe(`/signin?next=${encodeURIComponent("/dashboard/tokens")}`);
  });
});

describe("client ID metadata documents", () => {
  let server: ReturnType<typeof Bun.serve>;
  let origin = "";
  beforeAll(() => {
    server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(request) {
        const path = new URL(request.url).pathname;
        const clientId = path === "/mismatch.json" ? `${origin}/someone-else.json` : `${origin}${path}`;
        return Response.json({
          client_id: clientId,
          client_name: "Metadata Client",
          redirect_uris: ["http://127.0.0.1:8976/callback"],
          token_endpoint_auth_method: "none",
        });
      },
    });
    origin = `http://127.0.0.1:${server.port}`;
  });
  afterAll(() => server.stop(true));

  test("a client known by its metadata URL completes the flow", async () => {
    const clientId = `${origin}/client.json`;
    const { verifier, challenge } = pkcePair();
    const page = await (await browser.get(authorizePath(clientId, challenge))).text();
    expect(page).toContain("Metadata Client");
    const code = (await consent(browser, authorizePath(clientId, challenge))).searchParams.get("code") ?? "";
    const response = await tokenRequest(h, {
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      client_id: clientId,
      redirect_uri: "http://127.0.0.1:8976/callback",
    });
    expect(response.status).toBe(200);
  });

  test("a document whose client_id differs from its URL is refused", async () => {
    const response = await browser.get(authorizePath(`${origin}/mismatch.json`, pkcePair().challenge));
    expect(response.status).toBe(400);
    expect(response.headers.get("location")).toBeNull();
    expect(await response.text()).toContain("different client_id");
  });

  test("without allowInsecureClientMetadata an http client id is refused", async () => {
    const strict = await createHarness({ allowInsecureClientMetadata: false });
    try {
      await strict.auth.createUser({ email: "strict@example.com", password: "correct horse battery", name: "S" });
      const b = strict.browser();
      await b.signIn("strict@example.com", "correct horse battery");
      const response = await b.get(authorizePath(`${origin}/client.json`, pkcePair().challenge));
      expect(response.status).toBe(400);
      expect(await response.text()).toContain("must use https");
    } finally {
      await strict.close();
    }
  });
});

describe("expired rows", () => {
  test("the sweep removes expired sessions and refresh tokens and keeps live ones", async () => {
    const sweeper = await createHarness();
    try {
      await sweeper.auth.createUser({ email: "old@example.com", password: "correct horse battery", name: "Old" });
      const old = sweeper.browser();
      await old.signIn("old@example.com", "correct horse battery");
      const stale = await sweeper.auth.issueTokenForScript({ email: "old@example.com" });
      expect(await sweeper.auth.sweepExpired()).toEqual({ codes: 0, sessions: 0, refreshTokens: 0 });

      sweeper.clock.now += 31 * 86_400_000;
      const fresh = await sweeper.auth.issueTokenForScript({ email: "old@example.com" });
      const removed = await sweeper.auth.sweepExpired();
      expect(removed.sessions).toBeGreaterThanOrEqual(1);
      expect(removed.refreshTokens).toBeGreaterThanOrEqual(1);
      const refresh = (token: string) =>
        tokenRequest(sweeper, { grant_type: "refresh_token", refresh_token: token, client_id: "hatch-cli" });
      expect((await refresh(stale.refreshToken)).status).toBe(400);
      expect((await refresh(fresh.refreshToken)).status).toBe(200);
    } finally {
      await sweeper.close();
    }
  });
});
