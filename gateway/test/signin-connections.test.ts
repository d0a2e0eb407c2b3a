import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import {
  authorizePath,
  consent,
  createHarness,
  MCP,
  REDIRECT,
  registerClientId,
  tokenRequest,
  type Browser,
  type Harness,
  type Tokens,
} from "./oauth-harness.ts";
import { csrfOf, pkcePair } from "./support.ts";

// Issue 16, points 2 and 4 over HTTP: sign-in and sign-up keep the pending authorization and say what it is for;
// forgot password end to end (the mail captured where orgs would send it); re-approving replaces a connection;
// revoking asks, then says so; a revoked connection's refresh says why and how to connect again.

setDefaultTimeout(60_000);
const PASSWORD = "correct horse battery";
let h: Harness;
const mailed: { email: string; token: string }[] = [];

beforeAll(async () => {
  h = await createHarness({
    sendPasswordResetMail: async (user, token) => {
      mailed.push({ email: user.email, token });
      return "outbox";
    },
  });
});
afterAll(() => h.close());

let people = 0;
async function person(): Promise<{ email: string; browser: Browser }> {
  const email = `signin${++people}@example.com`;
  const browser = h.browser();
  expect((await browser.signUp(email)).status).toBe(303);
  return { email, browser };
}

/** The code flow for an already registered client; the token response. */
async function approve(browser: Browser, clientId: string): Promise<Tokens> {
  const { verifier, challenge } = pkcePair();
  const code = (await consent(browser, authorizePath(clientId, challenge))).searchParams.get("code") ?? "";
  const response = await tokenRequest(h, {
    grant_type: "authorization_code",
    code,
    code_verifier: verifier,
    client_id: clientId,
    redirect_uri: REDIRECT,
    resource: MCP,
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Tokens;
}

const refresh = (clientId: string, token: string) =>
  tokenRequest(h, { grant_type: "refresh_token", refresh_token: token, client_id: clientId });

describe("sign-in and sign-up keep the pending authorization", () => {
  test("every link between them carries it, the header's too, and the pages name the approved client", async () => {
    const clientId = await registerClientId(h, "Signin Probe");
    const authorize = authorizePath(clientId, pkcePair().challenge);
    const start = await h.browser().get(authorize);
    expect(start.status).toBe(303);
    const signInPath = start.headers.get("location") ?? "";
    const next = new URL(signInPath, "http://x").searchParams.get("next") ?? "";
    // The same request, reordered by the redirect: every parameter kept.
    const asked = new URL(authorize, "http://x").searchParams;
    const kept = new URL(next, "http://x").searchParams;
    expect(Object.fromEntries(kept)).toEqual(Object.fromEntries(asked));

    const signIn = await (await h.browser().get(signInPath)).text();
    expect(signIn).toContain("<h1>Sign in to connect Signin Probe to Hatch</h1>");
    expect(signIn).toContain("<title>Sign in to connect Signin Probe · Hatch</title>");
    const links = [...signIn.matchAll(/href="(\/sign(?:up|in)[^"]*)"/g)].map((m) => m[1]?.replaceAll("&amp;", "&"));
    // The header's Sign in and Sign up, and the body's Sign up: all carry the authorization.
    expect(links.length).toBe(3);
    for (const link of links) expect(new URL(link ?? "", "http://x").searchParams.get("next")).toBe(next);
    const forgot = /href="(\/forgot-password[^"]*)"/.exec(signIn)?.[1]?.replaceAll("&amp;", "&") ?? "";
    expect(new URL(forgot, "http://x").searchParams.get("next")).toBe(next);

    const signUp = await (await h.browser().get(`/signup?next=${encodeURIComponent(next)}`)).text();
    expect(signUp).toContain("<h1>Sign up to connect Signin Probe to Hatch</h1>");
    const upLinks = [...signUp.matchAll(/href="(\/sign(?:up|in)[^"]*)"/g)].map((m) => m[1]?.replaceAll("&amp;", "&"));
    expect(upLinks.length).toBe(3);
    for (const link of upLinks) expect(new URL(link ?? "", "http://x").searchParams.get("next")).toBe(next);
  });

  test("a crafted next names no client: only an authorization that would reach consent does", async () => {
    const page = await (
      await h.browser().get(`/signin?next=${encodeURIComponent("/oauth/authorize?client_id=nope")}`)
    ).text();
    expect(page).toContain("<h1>Sign in</h1>");
    expect(page).not.toContain("to connect");
  });

  test("a taken email on sign-up offers “Sign in instead” as a link that keeps the authorization", async () => {
    const { email } = await person();
    const clientId = await registerClientId(h, "Signin Probe");
    const next = authorizePath(clientId, pkcePair().challenge);
    const browser = h.browser();
    const form = await (await browser.get(`/signup?next=${encodeURIComponent(next)}`)).text();
    const refused = await browser.post("/signup", {
      csrf: csrfOf(form),
      next,
      email,
      name: "Again",
      password: PASSWORD,
    });
    expect(refused.status).toBe(400);
    const page = await refused.text();
    const link = /<a href="([^"]+)">Sign in instead<\/a>/.exec(page)?.[1]?.replaceAll("&amp;", "&") ?? "";
    const url = new URL(link, "http://x");
    expect(url.pathname).toBe("/signin");
    expect(url.searchParams.get("next")).toBe(next);
    expect(url.searchParams.get("email")).toBe(email);
    // Following it: the email is filled in and signing in leads on to consent.
    const signIn = await browser.get(link);
    expect(await signIn.text()).toContain(`value="${email}"`);
    const done = await browser.signIn(email, PASSWORD, next);
    expect(done.headers.get("location")).toBe(next);
  });
});

describe("forgot password", () => {
  const tokenOf = (email: string) => mailed.filter((m) => m.email === email).at(-1)?.token ?? "";

  test("a mailed one-use link sets a new password, signs out every browser and disconnects every client", async () => {
    const { email, browser: elsewhere } = await person();
    const clientId = await registerClientId(h, "Signin Probe");
    const tokens = await approve(elsewhere, clientId);

    const browser = h.browser();
    const asked = await browser.submit("/forgot-password", "/forgot-password", { email });
    expect(asked.status).toBe(200);
    expect(await asked.text()).toContain(`If an account uses <strong>${email}</strong>, a link to reset its password`);
    const token = tokenOf(email);
    expect(token).not.toBe("");

    const form = await browser.get(`/reset-password?token=${token}`);
    expect(await form.text()).toContain("Choose a new password");
    const short = await browser.submit(`/reset-password?token=${token}`, "/reset-password", { password: "short" });
    expect(short.status).toBe(400);
    expect(await short.text()).toContain("at least 8 characters");
    const saved = await browser.submit(`/reset-password?token=${token}`, "/reset-password", {
      password: "a brand new passphrase",
    });
    expect(saved.status).toBe(200);
    const done = await saved.text();
    expect(done).toContain("Password changed");
    expect(done).toContain("1 AI client connection was disconnected");

    // This browser is signed in; the other one was signed out; the client's refresh says why.
    expect((await browser.get("/dashboard/tokens")).status).toBe(200);
    expect((await elsewhere.get("/dashboard/tokens")).status).toBe(303);
    const refused = await refresh(clientId, tokens.refresh_token);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({
      error: "invalid_grant",
      error_description: expect.stringContaining("the account's password was reset"),
    });
    // Old password out, new one in; the link works once.
    expect((await h.browser().signIn(email, PASSWORD)).status).toBe(401);
    expect((await h.browser().signIn(email, "a brand new passphrase")).status).toBe(303);
    const again = await h.browser().get(`/reset-password?token=${token}`);
    expect(again.status).toBe(410);
    expect(await again.text()).toContain("each link works once");
  });

  test("an unknown email gets the same answer and no mail; a bad or expired link is refused", async () => {
    const before = mailed.length;
    const asked = await h.browser().submit("/forgot-password", "/forgot-password", { email: "nobody@example.com" });
    expect(asked.status).toBe(200);
    expect(await asked.text()).toContain("If an account uses <strong>nobody@example.com</strong>");
    expect(mailed.length).toBe(before);

    const bad = await h.browser().get("/reset-password?token=abc.def");
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("This password reset link is not valid");
    const invalidEmail = await h.browser().submit("/forgot-password", "/forgot-password", { email: "not an email" });
    expect(invalidEmail.status).toBe(400);

    const { email } = await person();
    await h.browser().submit("/forgot-password", "/forgot-password", { email });
    const token = tokenOf(email);
    h.clock.now += 61 * 60_000;
    try {
      const late = await h.browser().get(`/reset-password?token=${token}`);
      expect(late.status).toBe(410);
      expect(await late.text()).toContain("links work for 1 hour");
    } finally {
      h.clock.now -= 61 * 60_000;
    }
  });
});

describe("connections that say what they are", () => {
  test("re-approving the same client replaces its row; the replaced refresh says so", async () => {
    const { browser } = await person();
    const clientId = await registerClientId(h, "Signin Probe");
    const first = await approve(browser, clientId);
    await approve(browser, clientId);
    const page = await (await browser.get("/dashboard/tokens")).text();
    expect(page.match(/\/dashboard\/tokens\/revoke\?grant=/g)?.length).toBe(1);
    expect(page).toContain(`Client ID: registered here (${clientId})`);
    expect(page).toContain("Returns to: 127.0.0.1:8976");
    const old = await refresh(clientId, first.refresh_token);
    expect(await old.json()).toMatchObject({
      error: "invalid_grant",
      error_description: expect.stringContaining("This connection was replaced"),
    });
  });

  test("a client registered again under the same name and redirect replaces the earlier one too", async () => {
    const { browser } = await person();
    await approve(browser, await registerClientId(h, "Inspector Probe"));
    await approve(browser, await registerClientId(h, "Inspector Probe"));
    await approve(browser, await registerClientId(h, "Another Probe"));
    const page = await (await browser.get("/dashboard/tokens")).text();
    expect(page.match(/Inspector Probe<\/strong>/g)?.length).toBe(1);
    expect(page.match(/Another Probe<\/strong>/g)?.length).toBe(1);
  });

  test("Revoke asks on a page of its own, then says it is done", async () => {
    const { browser } = await person();
    const clientId = await registerClientId(h, "Signin Probe");
    const tokens = await approve(browser, clientId);
    const list = await (await browser.get("/dashboard/tokens")).text();
    const link = /href="(\/dashboard\/tokens\/revoke\?grant=[^"]+)"/.exec(list)?.[1] ?? "";
    const ask = await browser.get(link);
    const question = await ask.text();
    expect(question).toContain("<h1>Revoke Signin Probe?</h1>");
    expect(question).toContain(">Revoke Signin Probe</button>");
    // Asking changed nothing yet.
    expect((await refresh(clientId, tokens.refresh_token)).status).toBe(200);
    const listed = await (await browser.get("/dashboard/tokens")).text();
    const fresh = /href="(\/dashboard\/tokens\/revoke\?grant=[^"]+)"/.exec(listed)?.[1] ?? "";

    const done = await browser.submit(fresh, "/dashboard/tokens/revoke", {});
    expect(done.status).toBe(303);
    const after = await browser.get(done.headers.get("location") ?? "");
    const text = await after.text();
    expect(text).toContain("Signin Probe is revoked");
    expect(text).toContain("No AI client is connected");
    expect((await h.auth.authenticate(`Bearer ${tokens.access_token}`)).ok).toBe(false);
  });

  test("a revoked client's refresh: invalid_grant saying it was revoked on the Connected clients page and how to connect again", async () => {
    const { browser } = await person();
    const clientId = await registerClientId(h, "Signin Probe");
    const tokens = await approve(browser, clientId);
    const listed = await (await browser.get("/dashboard/tokens")).text();
    const ask = /href="(\/dashboard\/tokens\/revoke\?grant=[^"]+)"/.exec(listed)?.[1] ?? "";
    expect((await browser.submit(ask, "/dashboard/tokens/revoke", {})).status).toBe(303);
    const refused = await refresh(clientId, tokens.refresh_token);
    expect(refused.status).toBe(400);
    const body = (await refused.json()) as { error: string; error_description: string };
    expect(body.error).toBe("invalid_grant");
    expect(body.error_description).toContain(
      "revoked by the user on the Hatch Connected clients page (http://localhost:3000/dashboard/tokens)",
    );
    expect(body.error_description).toContain("To connect again, start the sign-in again from the AI client");
    const bearer = await h.auth.authenticate(`Bearer ${tokens.access_token}`);
    expect(bearer.ok).toBe(false);
    if (!bearer.ok) expect(bearer.description).toContain("revoked by the user on the Hatch Connected clients page");
  });

  test("someone else's grant cannot be asked about: the revoke page sends them back to their list", async () => {
    const { browser } = await person();
    const tokens = await approve(browser, await registerClientId(h, "Signin Probe"));
    const identity = await h.auth.authenticate(`Bearer ${tokens.access_token}`);
    if (!identity.ok) throw new Error("token should work");
    const { browser: stranger } = await person();
    const peek = await stranger.get(`/dashboard/tokens/revoke?grant=${identity.identity.grantId}`);
    expect(peek.status).toBe(303);
    expect(peek.headers.get("location")).toBe("/dashboard/tokens");
    const notice = await (await stranger.get(`/dashboard/tokens?revoked=${identity.identity.grantId}`)).text();
    expect(notice).not.toContain("is revoked");
  });
});
