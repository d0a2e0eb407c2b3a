import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createLogger } from "@hatch/platform";
import { Elysia } from "elysia";
import { type Browser, type Page } from "playwright-core";
import { CHROMIUM, hasChromium, launchChromium } from "../../test/support/chromium.ts";
import { createAuth, type Auth } from "../src/auth/index.ts";
import { gatewayConfig } from "../src/config.ts";
import { freePort } from "../../test/support/servers.ts";
import { openTestDatabase, pkcePair, type TestDatabase } from "./support.ts";

// Locally a missing browser skips the suite with a note; in CI (which installs it) it must run.
const suiteName = hasChromium
  ? "pages in a real browser"
  : `pages in a real browser (SKIPPED: ${CHROMIUM} is missing; apt-get install -y chromium)`;

describe.skipIf(!hasChromium)(suiteName, () => {
  let database: TestDatabase;
  let auth: Auth;
  let gateway: ReturnType<typeof Bun.serve>;
  let callback: ReturnType<typeof Bun.serve>;
  let browser: Browser;
  let page: Page;
  let base = "";

  beforeAll(async () => {
    const port = freePort();
    base = `http://127.0.0.1:${port}`;
    database = await openTestDatabase();
    auth = createAuth({
      config: gatewayConfig({ secret: "x".repeat(40), port, baseUrl: base }),
      db: database.db,
      logger: createLogger({ level: "silent" }),
      // Stands in for orgs' mailer: the verification mail is "sent" (these tests do not open it).
      sendVerificationMail: async () => "outbox",
    });
    const app = new Elysia().use(auth.routes);
    gateway = Bun.serve({ port, hostname: "127.0.0.1", fetch: (request) => app.handle(request) });
    // Stands in for the AI client's local callback listener.
    callback = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: () =>
        new Response("<!doctype html><title>Done</title><p>You can close this tab.</p>", {
          headers: { "content-type": "text/html" },
        }),
    });
    browser = await launchChromium();
    page = await browser.newPage();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    gateway?.stop(true);
    callback?.stop(true);
    await database?.close();
  });

  /** Fills labelled fields, presses the button and waits for the page the server answers with. */
  async function fillAndSubmit(fields: Record<string, string>, button: string) {
    for (const [label, value] of Object.entries(fields)) await page.getByLabel(label).fill(value);
    await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: button }).click()]);
  }

  test("sign up, sign out, sign in", async () => {
    await page.goto(`${base}/`);
    await page.getByRole("link", { name: "Sign up" }).first().click();
    await fillAndSubmit(
      { Name: "Grace Hopper", Email: "grace@example.com", Password: "correct horse battery" },
      "Sign up",
    );
    expect(new URL(page.url()).pathname).toBe("/dashboard");
    // This harness serves the auth routes only (the dashboard itself is test/dashboard.browser.test.ts's): the Tokens
    // page shows who is signed in.
    await page.goto(`${base}/dashboard/tokens`);
    expect(await page.locator("header").innerText()).toContain("grace@example.com");

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${base}/`);
    await page.getByRole("link", { name: "Sign in" }).first().click();
    await fillAndSubmit({ Email: "grace@example.com", Password: "correct horse battery" }, "Sign in");
    expect(new URL(page.url()).pathname).toBe("/dashboard");
  }, 30_000);

  test("connect a client, see it on Tokens, revoke it", async () => {
    const redirectUri = `http://127.0.0.1:${callback.port}/callback`;
    const registered = await fetch(`${base}/oauth/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_name: "Browser Client", redirect_uris: [redirectUri] }),
    });
    const { client_id: clientId } = (await registered.json()) as { client_id: string };
    const { verifier, challenge } = pkcePair();
    const query = new URLSearchParams({
      response_type: "code",
      client_id: clientId,
      redirect_uri: redirectUri,
      code_challenge: challenge,
      code_challenge_method: "S256",
      state: "s1",
      resource: `${base}/mcp`,
    });

    await page.goto(`${base}/oauth/authorize?${query}`);
    const consentText = await page.locator("main").innerText();
    expect(consentText).toContain("Browser Client");
    expect(consentText).toContain(`127.0.0.1:${callback.port}`);
    await page.getByRole("button", { name: "Allow full access" }).click();
    await page.waitForURL((url) => url.href.startsWith(redirectUri));
    const landed = new URL(page.url());
    expect(landed.searchParams.get("state")).toBe("s1");

    const exchanged = await fetch(`${base}/oauth/token`, {
      method: "POST",
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code: landed.searchParams.get("code") ?? "",
        code_verifier: verifier,
        client_id: clientId,
        redirect_uri: redirectUri,
        resource: `${base}/mcp`,
      }),
    });
    expect(exchanged.status).toBe(200);
    const { access_token: accessToken } = (await exchanged.json()) as { access_token: string };
    expect((await auth.authenticate(`Bearer ${accessToken}`)).ok).toBe(true);

    await page.goto(`${base}/dashboard/tokens`);
    const row = page.getByRole("row", { name: /Browser Client/ });
    expect(await row.innerText()).toContain("Full access");
    // Revoke asks first (a page of its own), then says it is done.
    await Promise.all([page.waitForNavigation(), row.getByRole("link", { name: "Revoke Browser Client" }).click()]);
    expect(await page.locator("h1").innerText()).toBe("Revoke Browser Client?");
    await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Revoke Browser Client" }).click()]);
    expect(new URL(page.url()).pathname).toBe("/dashboard/tokens");
    expect(await page.getByRole("row", { name: /Browser Client/ }).count()).toBe(0);
    expect((await auth.authenticate(`Bearer ${accessToken}`)).ok).toBe(false);
  }, 30_000);
});
