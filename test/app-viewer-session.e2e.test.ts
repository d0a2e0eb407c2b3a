import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { callRpc } from "@hatch/platform";
import { deriveKey, rpcMethods, signViewerCheck, ViewerCheckSchema } from "@hatch/contracts";
import type { AppsService } from "@hatch/apps";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { type Browser, type Page } from "playwright-core";
import { seedApp } from "../services/apps/test/support/seed.ts";
import { hasChromium, launchChromium } from "./support/chromium.ts";
import { csrfOf, HostCookieJar, signInToApp } from "./support/cookies.ts";
import { eventually } from "./support/eventually.ts";
import { startTestHatch, TEST_SECRET, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, connectFormClient, userWithToken } from "./support/mcp.ts";
import { joinOrg } from "./support/orgs.ts";
import { MODES } from "./support/servers.ts";

const PASSWORD = "correct horse battery";
// Bun 1.4.5 keeps its 5 s default whatever bunfig says; these tests sign in through several pages.
const TEST_TIMEOUT_MS = 30_000;

type User = Awaited<ReturnType<typeof userWithToken>>;

// The app host's viewer cookie is bound to the Hatch browser session it came from, and the app host asks the
// gateway who that session is (briefly cached, dropped on sign-out and membership changes): signing out of Hatch
// ends every app session of that browser, a removed member loses an organization's apps on the next request, and
// when nobody can say who the viewer is a private app is refused (503), never shown.
for (const mode of MODES) {
  describe(`app viewers follow the Hatch session (${mode})`, () => {
    let hatch: TestHatch;
    let apps: AppsService;
    let alice: User, bob: User, carol: User;
    let aliceAi: Client;
    let orgId = "";
    const origin = (address: string) => hatch.appHostUrl.replace("//", `//${address}.`);
    const notes = () => `${origin(`alice-notes-${mode}`)}/`;
    const team = () => `${origin(`team-${mode}`)}/`;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      apps = hatch.services.get("apps") as AppsService;
      alice = await userWithToken(hatch, { name: "Alice" });
      bob = await userWithToken(hatch, { name: "Bob" });
      carol = await userWithToken(hatch, { name: "Carol" });
      aliceAi = await connectClient(hatch, alice.accessToken);
      const created = await callOk<{ org: { id: string } }>(aliceAi, "org_setup", {
        action: "create",
        name: `Viewers ${mode}`,
      });
      orgId = created.org.id;
      const bobAi = await connectClient(hatch, bob.accessToken);
      await joinOrg(aliceAi, bobAi, bob.email);
      await bobAi.close();
      const owner = { id: alice.id, email: alice.email };
      await seedApp(apps.context, {
        owner,
        accountId: orgId,
        address: `alice-notes-${mode}`,
        visibility: "private",
        files: { "index.html": "<h1>My notes</h1>" },
      });
      await seedApp(apps.context, {
        owner,
        accountId: orgId,
        address: `team-${mode}`,
        visibility: "org",
        files: { "index.html": "<h1>Team page</h1>" },
      });
    }, 90_000);
    afterAll(async () => {
      await aliceAi?.close();
      await hatch?.stop();
    });

    const openSignedIn = async (jar: HostCookieJar, appUrl: string, email: string) => {
      await signInToApp(hatch, jar, appUrl, email);
      return jar.fetch(appUrl);
    };

    async function signOutOfHatch(jar: HostCookieJar): Promise<void> {
      const page = await jar.fetch(`${hatch.baseUrl}/dashboard/tokens`);
      expect(page.status).toBe(200);
      const out = await jar.post(`${hatch.baseUrl}/signout`, { csrf: csrfOf(await page.text()) });
      expect(out.status).toBe(303);
    }

    test(
      "signing out of Hatch ends the app session: the same app cookie is sent to sign in on the next request",
      async () => {
        const jar = new HostCookieJar();
        const opened = await openSignedIn(jar, notes(), alice.email);
        expect(opened.status).toBe(200);
        expect(await opened.text()).toBe("<h1>My notes</h1>");
        expect((await jar.fetch(notes())).status).toBe(200);
        await signOutOfHatch(jar);
        expect(jar.namesFor(notes())).toContain("hatch_viewer");
        const after = await jar.fetch(notes());
        expect(after.status).toBe(302);
        expect(after.headers.get("location")).toStartWith(`${hatch.baseUrl}/apps/signin?`);
        expect(await after.text()).not.toContain("My notes");
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "switching accounts from the 403 page ends the first account's app session",
      async () => {
        const jar = new HostCookieJar();
        const refused = await openSignedIn(jar, notes(), carol.email);
        expect(refused.status).toBe(403);
        const body = await refused.text();
        expect(body).toContain(carol.email);
        const switchUrl = /href="([^"]+)">Sign in as someone else/.exec(body)![1]!.replaceAll("&amp;", "&");
        const form = await (await jar.fetch(switchUrl)).text();
        const out = await jar.post(`${hatch.baseUrl}/apps/signin/switch`, {
          csrf: csrfOf(form),
          app: `alice-notes-${mode}`,
          path: "/",
        });
        expect(out.status).toBe(303);
        // Carol's app cookie is still in the jar, but her Hatch session is over: no page names her any more.
        const after = await jar.fetch(notes());
        expect(after.status).toBe(302);
        expect(await after.text()).not.toContain(carol.email);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "a member removed from the organization is refused the org's app with the cookie they already hold",
      async () => {
        const jar = new HostCookieJar();
        const opened = await openSignedIn(jar, team(), bob.email);
        expect(opened.status).toBe(200);
        expect(await opened.text()).toBe("<h1>Team page</h1>");
        expect((await jar.fetch(team())).status).toBe(200);

        const { client, asked } = await connectFormClient(hatch, alice.accessToken, () => ({
          action: "accept",
          content: { confirm: true },
        }));
        expect(await callOk(client, "org_member_update", { email: bob.email, action: "remove" })).toMatchObject({
          status: "removed",
        });
        expect(asked).toHaveLength(1);
        await client.close();

        // The gateway's broadcast travels the bus (in the real mode another round trip than the tool's reply); the
        // app host's own cache would keep the old answer for 30 s, longer than this waits.
        const refused = await eventually(async () => {
          const response = await jar.fetch(team());
          return response.status === 403 ? response : void (await response.text());
        }, "the removed member to be refused");
        const body = await refused.text();
        expect(body).toContain(bob.email);
        expect(body).not.toContain("Team page");
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "the ticket names the session by its hash; the gateway answers only signed questions, for the session's own user",
      async () => {
        const jar = new HostCookieJar();
        await signInToApp(hatch, jar, notes(), alice.email);
        const sessionId = jar.valueFor(hatch.baseUrl, "hatch_session")!;
        const sessionHash = createHash("sha256").update(sessionId).digest("hex");
        const again = await jar.fetch(
          `${hatch.baseUrl}/apps/signin?${new URLSearchParams({ app: `alice-notes-${mode}`, path: "/" })}`,
        );
        const ticket = new URL(again.headers.get("location")!).searchParams.get("ticket")!;
        const claims = JSON.parse(Buffer.from(ticket.split(".")[0]!, "base64url").toString());
        expect(claims).toMatchObject({ sub: alice.id, session: sessionHash });
        expect(ticket).not.toContain(sessionId);
        expect(JSON.stringify(claims)).not.toContain(alice.email);

        const key = deriveKey(TEST_SECRET, "viewer-ticket");
        const ask = (check: string) =>
          callRpc(hatch.bus, "gateway", rpcMethods.gateway.viewerCheck, { check }, ViewerCheckSchema);
        expect(await ask(signViewerCheck(key, { sub: alice.id, session: sessionHash }))).toEqual({
          viewer: { sub: alice.id, email: alice.email, name: "Alice", emailVerified: true, account: orgId },
        });
        expect(await ask(signViewerCheck(key, { sub: carol.id, session: sessionHash }))).toEqual({ viewer: null });
        expect(await ask(signViewerCheck(key, { sub: alice.id, session: sessionId }))).toEqual({ viewer: null });
        // A stranger on the bus who read the session and the sub in some URL cannot ask.
        const unsigned = Buffer.from(
          JSON.stringify({ v: 1, typ: "viewer-check", sub: alice.id, session: sessionHash, exp: 9e9 }),
        ).toString("base64url");
        await expect(ask(`${unsigned}.AAAA`)).rejects.toMatchObject({ code: "forbidden" });
        await expect(ask(ticket)).rejects.toMatchObject({ code: "forbidden" });
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

      async function signInOnGateway(page: Page, email: string): Promise<void> {
        await page.goto(`${hatch.baseUrl}/signin`);
        await page.getByLabel("Email").fill(email);
        await page.getByLabel("Password").fill(PASSWORD);
        await Promise.all([
          page.waitForURL((url) => url.pathname !== "/signin"),
          page.getByRole("button", { name: "Sign in" }).click(),
        ]);
      }

      async function signOut(page: Page): Promise<void> {
        await page.goto(`${hatch.baseUrl}/dashboard/tokens`);
        await Promise.all([
          page.waitForURL((url) => !url.pathname.startsWith("/dashboard")),
          page.getByRole("button", { name: "Sign out" }).click(),
        ]);
      }

      test(
        "a shared browser: after alice signs out, carol is never shown alice's private app, and alice is named as alice again",
        async () => {
          const context = await browser.newContext();
          const page = await context.newPage();
          await page.goto(notes());
          expect(new URL(page.url()).pathname).toBe("/signin");
          await page.getByLabel("Email").fill(alice.email);
          await page.getByLabel("Password").fill(PASSWORD);
          await Promise.all([page.waitForURL(notes()), page.getByRole("button", { name: "Sign in" }).click()]);
          expect(await page.locator("h1").innerText()).toBe("My notes");

          await signOut(page);
          await signInOnGateway(page, carol.email);
          await page.goto(notes());
          const seen = await page.locator("body").innerText();
          expect(seen).not.toContain("My notes");
          expect(seen).not.toContain(alice.email);
          expect(seen).toContain(carol.email);

          await signOut(page);
          await signInOnGateway(page, alice.email);
          await page.goto(notes());
          expect(await page.locator("h1").innerText()).toBe("My notes");
          expect(await page.locator("body").innerText()).not.toContain(carol.email);
          await context.close();
        },
        TEST_TIMEOUT_MS,
      );
    });
  });

  describe(`when the gateway cannot say who the viewer is (${mode})`, () => {
    let hatch: TestHatch;
    let owner: User;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      owner = await userWithToken(hatch, { name: "Owner" });
      const apps = hatch.services.get("apps") as AppsService;
      const base = { owner: { id: owner.id, email: owner.email }, accountId: "acct-any" };
      await seedApp(apps.context, {
        ...base,
        address: `shut-${mode}`,
        visibility: "private",
        files: { "index.html": "<h1>Private</h1>" },
      });
      await seedApp(apps.context, {
        ...base,
        address: `still-open-${mode}`,
        visibility: "public",
        files: { "index.html": "<h1>Public</h1>" },
      });
    }, 90_000);
    afterAll(async () => {
      await hatch?.stop();
    });

    test(
      "a private app answers 503 with a page that says so; a public app is still served",
      async () => {
        const origin = (address: string) => hatch.appHostUrl.replace("//", `//${address}.`);
        const jar = new HostCookieJar();
        // Signed in (the app cookie is set), but the app not opened yet: nothing about this viewer is cached.
        await signInToApp(hatch, jar, `${origin(`shut-${mode}`)}/`, owner.email);
        expect(jar.namesFor(origin(`shut-${mode}`))).toEqual(["hatch_viewer"]);

        // The gateway stops answering (as when it or the bus is down).
        await hatch.gateway.close();
        const refused = await jar.fetch(`${origin(`shut-${mode}`)}/`);
        const body = await refused.text();
        expect(refused.status).toBe(503);
        expect(body).toContain("Hatch could not check who you are");
        expect(body).not.toContain("<h1>Private</h1>");
        const open = await fetch(`${origin(`still-open-${mode}`)}/`);
        expect(open.status).toBe(200);
        expect(await open.text()).toBe("<h1>Public</h1>");
      },
      TEST_TIMEOUT_MS,
    );
  });
}
