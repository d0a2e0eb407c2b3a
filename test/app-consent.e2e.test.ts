import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppsService } from "@hatch/apps";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { type Browser, type Page } from "playwright-core";
import { seedApp } from "../services/apps/test/support/seed.ts";
import { hasChromium, launchChromium } from "./support/chromium.ts";
import { csrfOf, HostCookieJar, signInWithForm } from "./support/cookies.ts";
import { eventually } from "./support/eventually.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { joinOrg } from "./support/orgs.ts";
import { MODES } from "./support/servers.ts";

const PASSWORD = "correct horse battery";
// Bun 1.4.5 keeps its 5 s default whatever bunfig says; these tests sign in through several pages.
const TEST_TIMEOUT_MS = 30_000;

type User = Awaited<ReturnType<typeof userWithToken>>;

/** A public app's page: a Sign in button (hatch.signIn()) and who hatch.me() says is here. */
const GUESTBOOK = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Guestbook</title></head>
<body><h1>Guestbook</h1><p>Hello, <b id="who">…</b></p><button id="signin">Sign in</button>
<script type="module">
import hatch from "/_hatch/client.mjs";
document.getElementById("signin").addEventListener("click", () => hatch.signIn());
const me = await hatch.me();
document.getElementById("who").textContent = me ? me.name + " <" + me.email + ">" : "nobody";
</script></body></html>`;

// A public app learns who visits (name, email: hatch.me(), its data and server code) only after that person agreed on a
// consent page naming the app, its owner and what it learns. The yes is kept per person and app and listed on the
// dashboard with Remove, which ends what the app sees at once. One's own apps and one's organization's ask nothing,
// and neither do apps whose owner shared them with the person (they were chosen by email or organization).
for (const mode of MODES) {
  describe(`public apps ask before they learn who visits (${mode})`, () => {
    let hatch: TestHatch;
    let apps: AppsService;
    let alice: User, bob: User, carol: User;
    let aliceAi: Client;
    let orgId = "";
    let guestbookId = "";
    const origin = (address: string) => hatch.appHostUrl.replace("//", `//${address}.`);
    const guestbook = () => `guestbook-${mode}`;
    const signinUrl = (address: string, path = "/") =>
      `${hatch.baseUrl}/apps/signin?${new URLSearchParams({ app: address, path })}`;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      apps = hatch.services.get("apps") as AppsService;
      alice = await userWithToken(hatch, { name: "Alice Owner" });
      bob = await userWithToken(hatch, { name: "Bob Member" });
      carol = await userWithToken(hatch, { name: "Carol Visitor" });
      aliceAi = await connectClient(hatch, alice.accessToken);
      orgId = (
        await callOk<{ org: { id: string } }>(aliceAi, "org_setup", { action: "create", name: `Consent ${mode}` })
      ).org.id;
      const bobAi = await connectClient(hatch, bob.accessToken);
      await joinOrg(aliceAi, bobAi, bob.email);
      await bobAi.close();
      const owner = { id: alice.id, email: alice.email, name: "Alice Owner" };
      guestbookId = (
        await seedApp(apps.context, {
          owner,
          accountId: orgId,
          address: guestbook(),
          name: "Guestbook",
          visibility: "public",
          files: { "index.html": GUESTBOOK },
        })
      ).id;
      await seedApp(apps.context, {
        owner,
        accountId: "acct-elsewhere",
        address: `alice-own-${mode}`,
        visibility: "public",
        files: { "index.html": "<h1>Own</h1>" },
      });
      await seedApp(apps.context, {
        owner,
        accountId: orgId,
        address: `shared-${mode}`,
        visibility: "people",
        people: [carol.email],
        files: { "index.html": "<h1>Shared with Carol</h1>" },
      });
    }, 90_000);
    afterAll(async () => {
      await aliceAi?.close();
      await hatch?.stop();
    });

    /** A browser (cookie jar) signed in to Hatch as `email`. */
    async function signedIn(email: string): Promise<HostCookieJar> {
      const jar = new HostCookieJar();
      await signInWithForm(jar, `${hatch.baseUrl}/signin`, email, PASSWORD);
      return jar;
    }

    /** Follows a viewer ticket to the app: the app's cookie is set and the browser is sent to `path` there. */
    async function followTicket(jar: HostCookieJar, answer: Response, address: string, path = "/"): Promise<void> {
      expect(answer.status).toBe(303);
      const location = new URL(answer.headers.get("location")!);
      expect(location.origin + location.pathname).toBe(`${origin(address)}/_hatch/auth`);
      const back = await jar.fetch(location.href);
      expect(back.status).toBe(302);
      expect(back.headers.get("location")).toBe(`${origin(address)}${path}`);
    }

    const me = async (jar: HostCookieJar, address: string) => {
      const answer = await jar.fetch(`${origin(address)}/_hatch/me`);
      expect(answer.status).toBe(200);
      return answer.json();
    };

    test(
      "a first sign-in shows the consent page; me() is null until Continue; then the ticket is issued and remembered",
      async () => {
        const jar = await signedIn(carol.email);
        expect(await me(jar, guestbook())).toBeNull();

        const asked = await jar.fetch(signinUrl(guestbook(), "/visit?x=1"));
        expect(asked.status).toBe(200);
        expect(asked.headers.get("location")).toBeNull();
        const page = await asked.text();
        expect(page).toContain("Let Guestbook know who you are?");
        expect(page).toContain(origin(guestbook()));
        expect(page).toContain("Alice Owner");
        expect(page).toContain("Carol Visitor");
        expect(page).toContain(carol.email);
        expect(page).toContain(">Continue</button>");
        expect(page).toContain(`href="${origin(guestbook())}/visit?x=1">Cancel</a>`);
        expect(page).not.toContain("ticket=");

        // Cancel is a link back to the app; nothing was recorded, so the app still sees nobody.
        expect(await me(jar, guestbook())).toBeNull();
        expect((await jar.fetch(signinUrl(guestbook()))).status).toBe(200);

        // Continue without the page's CSRF field is refused and records nothing.
        const fields = { app: guestbook(), path: "/visit?x=1", appId: guestbookId, ownerId: alice.id };
        const forged = await jar.post(`${hatch.baseUrl}/apps/signin/consent`, { ...fields, csrf: "forged" });
        expect(forged.status).toBeGreaterThanOrEqual(400);
        expect(forged.headers.get("location")).toBeNull();
        expect((await jar.fetch(signinUrl(guestbook()))).status).toBe(200);

        const agreed = await jar.post(`${hatch.baseUrl}/apps/signin/consent`, { ...fields, csrf: csrfOf(page) });
        await followTicket(jar, agreed, guestbook(), "/visit?x=1");
        expect(await me(jar, guestbook())).toEqual({ email: carol.email, name: "Carol Visitor" });

        // Remembered: the next sign-in to this app asks nothing.
        await followTicket(jar, await jar.fetch(signinUrl(guestbook())), guestbook());
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "one's own app, one's organization's app and an app shared with one need no consent",
      async () => {
        const aliceJar = await signedIn(alice.email);
        await followTicket(aliceJar, await aliceJar.fetch(signinUrl(`alice-own-${mode}`)), `alice-own-${mode}`);
        expect(await me(aliceJar, `alice-own-${mode}`)).toEqual({ email: alice.email, name: "Alice Owner" });
        await followTicket(aliceJar, await aliceJar.fetch(signinUrl(guestbook())), guestbook());
        expect(await me(aliceJar, guestbook())).toEqual({ email: alice.email, name: "Alice Owner" });

        const bobJar = await signedIn(bob.email);
        await followTicket(bobJar, await bobJar.fetch(signinUrl(guestbook())), guestbook());
        expect(await me(bobJar, guestbook())).toEqual({ email: bob.email, name: "Bob Member" });

        const carolJar = await signedIn(carol.email);
        await followTicket(carolJar, await carolJar.fetch(signinUrl(`shared-${mode}`)), `shared-${mode}`);
        expect(await (await carolJar.fetch(`${origin(`shared-${mode}`)}/`)).text()).toBe("<h1>Shared with Carol</h1>");
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "Remove on the dashboard takes it back: the app's session sees nobody at once, and the next sign-in asks again",
      async () => {
        const jar = await signedIn(carol.email);
        // Carol agreed in the first test; this browser signs in to the app without being asked.
        await followTicket(jar, await jar.fetch(signinUrl(guestbook())), guestbook());
        expect(await me(jar, guestbook())).toEqual({ email: carol.email, name: "Carol Visitor" });

        const dashboard = await jar.fetch(`${hatch.baseUrl}/dashboard`);
        expect(dashboard.status).toBe(200);
        const listed = await dashboard.text();
        expect(listed).toContain("Apps that know who you are");
        expect(listed).toContain(`data-consent="${guestbook()}"`);
        expect(listed).toContain("Remove Guestbook");

        const removed = await jar.post(`${hatch.baseUrl}/dashboard/consents/remove`, {
          csrf: csrfOf(listed),
          appId: guestbookId,
        });
        expect(removed.status).toBe(303);
        expect(removed.headers.get("location")).toBe("/dashboard");
        const after = await (await jar.fetch(`${hatch.baseUrl}/dashboard`)).text();
        expect(after).toContain("Guestbook no longer learns who you are.");
        expect(after).not.toContain(`data-consent="${guestbook()}"`);

        // The same app cookie: the app host dropped its cached answer on the gateway's broadcast (it travels the bus).
        await eventually(
          async () => ((await me(jar, guestbook())) === null ? true : undefined),
          "the app to see nobody after Remove",
        );
        expect((await jar.fetch(signinUrl(guestbook()))).status).toBe(200);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "a yes counts for the app and owner the page named",
      async () => {
        const jar = await signedIn(carol.email);
        const page = await (await jar.fetch(signinUrl(guestbook()))).text();
        const stale = await jar.post(`${hatch.baseUrl}/apps/signin/consent`, {
          app: guestbook(),
          path: "/",
          appId: guestbookId,
          ownerId: "someone-else",
          csrf: csrfOf(page),
        });
        expect(stale.status).toBe(200);
        expect(await stale.text()).toContain("Let Guestbook know who you are?");
        expect((await jar.fetch(signinUrl(guestbook()))).status).toBe(200);
      },
      TEST_TIMEOUT_MS,
    );

    describe.skipIf(!hasChromium)("in headless Chromium", () => {
      let browser: Browser;
      beforeAll(async () => {
        browser = await launchChromium();
      }, 60_000);
      afterAll(async () => {
        await browser?.close();
      });

      const who = (page: Page) =>
        page
          .waitForFunction(() => document.getElementById("who")?.textContent !== "…")
          .then(() => page.locator("#who").innerText());

      test(
        "hatch.signIn() on a public app: sign in, the consent page, Cancel and Continue, then hatch.me()",
        async () => {
          const context = await browser.newContext();
          const page = await context.newPage();
          await page.goto(`${origin(guestbook())}/`);
          expect(await who(page)).toBe("nobody");

          await page.getByRole("button", { name: "Sign in" }).click();
          await page.waitForURL((url) => url.pathname === "/signin");
          await page.getByLabel("Email").fill(carol.email);
          await page.getByLabel("Password").fill(PASSWORD);
          await Promise.all([
            page.waitForURL((url) => url.pathname === "/apps/signin"),
            page.getByRole("button", { name: "Sign in" }).click(),
          ]);
          expect(await page.locator("h1").innerText()).toBe("Let Guestbook know who you are?");
          const card = await page.locator("main").innerText();
          expect(card).toContain("Alice Owner");
          expect(card).toContain(carol.email);

          await Promise.all([
            page.waitForURL(`${origin(guestbook())}/`),
            page.getByRole("link", { name: "Cancel" }).click(),
          ]);
          expect(await who(page)).toBe("nobody");

          await page.getByRole("button", { name: "Sign in" }).click();
          await page.waitForURL((url) => url.pathname === "/apps/signin");
          await Promise.all([
            page.waitForURL(`${origin(guestbook())}/`),
            page.getByRole("button", { name: "Continue" }).click(),
          ]);
          expect(await who(page)).toBe(`Carol Visitor <${carol.email}>`);
          await context.close();
        },
        TEST_TIMEOUT_MS,
      );
    });
  });
}
