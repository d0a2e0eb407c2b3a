import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { callRpc } from "@hatch/platform";
import { deriveKey, rpcMethods, signContext, ViewerOriginSchema, type CallContextClaims } from "@hatch/contracts";
import type { AppsService } from "@hatch/apps";
import { type Browser } from "playwright-core";
import { hasChromium, launchChromium } from "./support/chromium.ts";
import { dailyOpens, dailyViewers } from "../services/apps/src/db/schema.ts";
import { seedApp } from "../services/apps/test/support/seed.ts";
import { csrfOf, HostCookieJar, signInWithForm } from "./support/cookies.ts";
import { startTestHatch, TEST_SECRET, type TestHatch } from "./support/hatch.ts";
import { MODES } from "./support/servers.ts";

const PASSWORD = "correct horse battery";

// Published apps seen from a browser: the app host on its own origin, the gateway's viewer sign-in, and the
// app's own cookie. Apps are seeded straight into the apps schema until the publish tool exists.
for (const mode of MODES) {
  describe(`app host end to end (${mode})`, () => {
    let hatch: TestHatch;
    let apps: AppsService;
    let owner: { id: string; email: string; name: string; account: string };
    let other: { id: string; email: string; name: string; account: string };
    const origin = (address: string) => hatch.appHostUrl.replace("//", `//${address}.`);

    async function user(label: string) {
      const email = `${label}-${mode}-${process.pid}@example.com`;
      const created = await hatch.gateway.auth.createUser({ email, password: PASSWORD, name: label });
      const session = await hatch.gateway.accounts.resolve(claimsOf(created), { requestId: "test", traceparent: "" });
      return { ...created, account: session.account };
    }

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      const service = hatch.services.get("apps");
      if (!service || !("context" in service)) throw new Error("the apps service did not start");
      apps = service as AppsService;
      owner = await user("owner");
      other = await user("other");
      const base = { owner: { id: owner.id, email: owner.email }, accountId: owner.account };
      await seedApp(apps.context, {
        ...base,
        address: `notes-${mode}`,
        visibility: "private",
        files: { "index.html": "<h1>My notes</h1>", "list.html": "<h1>The list</h1>" },
      });
      await seedApp(apps.context, {
        ...base,
        address: `open-${mode}`,
        visibility: "public",
        files: { "index.html": "<h1>Open to all</h1>" },
      });
    }, 90_000);
    afterAll(async () => {
      await hatch?.stop();
    });

    /** Signs in on the gateway's own sign-in page, as a browser would, and returns where it sent the browser. */
    async function signInOnGateway(jar: HostCookieJar, signInUrl: string, email: string): Promise<string> {
      const submitted = await signInWithForm(jar, signInUrl, email, PASSWORD);
      return new URL(submitted.headers.get("location")!, hatch.baseUrl).href;
    }

    /** From an app URL to the app's answer, following the whole sign-in with real requests. */
    async function openSignedIn(jar: HostCookieJar, appUrl: string, email: string): Promise<Response> {
      const first = await jar.fetch(appUrl);
      expect(first.status).toBe(302);
      let location = first.headers.get("location")!;
      // Not signed in on the gateway: its sign-in page, then back to the viewer sign-in.
      const viewerSignIn = await jar.fetch(location);
      expect(viewerSignIn.status).toBe(303);
      location = new URL(viewerSignIn.headers.get("location")!, hatch.baseUrl).href;
      if (new URL(location).pathname === "/signin") location = await signInOnGateway(jar, location, email);
      const ticketed = await jar.fetch(location);
      expect(ticketed.status).toBe(303);
      const authUrl = ticketed.headers.get("location")!;
      expect(authUrl.startsWith(`${origin(new URL(appUrl).hostname.split(".")[0]!)}/_hatch/auth?ticket=`)).toBe(true);
      // The app's origin receives none of the gateway's cookies: they are host-only on the gateway's host.
      expect(jar.namesFor(authUrl)).toEqual([]);
      const back = await jar.fetch(authUrl);
      expect(back.status).toBe(302);
      expect(back.headers.get("location")).toBe(appUrl);
      expect(jar.namesFor(appUrl)).toEqual(["hatch_viewer"]);
      return jar.fetch(appUrl);
    }

    test("anyone opens a public app; an anonymous viewer of a private one is sent to sign in", async () => {
      const open = await fetch(`${origin(`open-${mode}`)}/`);
      expect(open.status).toBe(200);
      expect(await open.text()).toBe("<h1>Open to all</h1>");
      const address = `notes-${mode}`;
      const anonymous = await fetch(`${origin(address)}/list?sort=new`, { redirect: "manual" });
      expect(anonymous.status).toBe(302);
      expect(anonymous.headers.get("location")).toBe(
        `${hatch.baseUrl}/apps/signin?${new URLSearchParams({ app: address, path: "/list?sort=new" })}`,
      );
    });

    test("the owner signs in through the gateway and comes back to the page asked for", async () => {
      const jar = new HostCookieJar();
      const url = `${origin(`notes-${mode}`)}/list?sort=new`;
      const page = await openSignedIn(jar, url, owner.email);
      expect(page.status).toBe(200);
      expect(await page.text()).toBe("<h1>The list</h1>");
      // The gateway's session stays on the gateway's host.
      expect(jar.namesFor(hatch.baseUrl).sort()).toEqual(["hatch_csrf", "hatch_session"]);
      expect(jar.namesFor(url)).toEqual(["hatch_viewer"]);
    });

    test("another user sees a 403 with their email, and can switch to the owner's account", async () => {
      const jar = new HostCookieJar();
      const url = `${origin(`notes-${mode}`)}/`;
      const refused = await openSignedIn(jar, url, other.email);
      expect(refused.status).toBe(403);
      const body = await refused.text();
      expect(body).toContain(other.email);
      expect(body).not.toContain("My notes");
      const switchUrl = /href="([^"]+)">Sign in as someone else/.exec(body)![1]!.replaceAll("&amp;", "&");
      const switchPage = await jar.fetch(switchUrl);
      expect(switchPage.status).toBe(200);
      const form = await switchPage.text();
      expect(form).toContain(other.email);
      const forged = await jar.post(`${hatch.baseUrl}/apps/signin/switch`, {
        csrf: "not-the-token",
        app: `notes-${mode}`,
        path: "/",
      });
      expect(forged.status).toBe(403);
      await forged.text();
      const signedOut = await jar.post(`${hatch.baseUrl}/apps/signin/switch`, {
        csrf: csrfOf(form),
        app: `notes-${mode}`,
        path: "/",
      });
      expect(signedOut.status).toBe(303);
      const next = await signInOnGateway(
        jar,
        new URL(signedOut.headers.get("location")!, hatch.baseUrl).href,
        owner.email,
      );
      const ticketed = await jar.fetch(next);
      const back = await jar.fetch(ticketed.headers.get("location")!);
      expect(back.status).toBe(302);
      const page = await jar.fetch(url);
      expect(page.status).toBe(200);
      expect(await page.text()).toBe("<h1>My notes</h1>");
    });

    test("the viewer sign-in only ever sends the browser to the app's own origin", async () => {
      const jar = new HostCookieJar();
      await openSignedIn(jar, `${origin(`notes-${mode}`)}/`, owner.email);
      const evil = await jar.fetch(
        `${hatch.baseUrl}/apps/signin?app=notes-${mode}&path=${encodeURIComponent("//evil.example/x")}`,
      );
      expect(evil.status).toBe(303);
      const location = new URL(evil.headers.get("location")!);
      expect(location.origin).toBe(origin(`notes-${mode}`));
      expect(location.searchParams.get("path")).toBe("/");
      const badApp = await jar.fetch(`${hatch.baseUrl}/apps/signin?app=${encodeURIComponent("evil.example")}&path=/`);
      expect(badApp.status).toBe(400);
      expect(badApp.headers.get("location")).toBeNull();
    });

    test("viewer.origin answers only the gateway, and the same way whether or not the app exists", async () => {
      const claims = claimsOf(owner);
      const ctx = signContext(claims, deriveKey(TEST_SECRET, "ctx"));
      const rpc = (address: string, withCtx: boolean) =>
        callRpc(
          hatch.bus,
          "apps",
          rpcMethods.apps.viewerOrigin,
          { address },
          ViewerOriginSchema,
          withCtx ? { ctx } : {},
        );
      expect(await rpc(`notes-${mode}`, true)).toEqual({ origin: origin(`notes-${mode}`) });
      expect(await rpc("never-made", true)).toEqual({ origin: origin("never-made") });
      await expect(rpc(`notes-${mode}`, false)).rejects.toMatchObject({ code: "forbidden" });
    });

    test("opens and unique viewers are written on flush, without the viewer's address", async () => {
      const app = await seedApp(apps.context, {
        owner: { id: owner.id, email: owner.email },
        accountId: owner.account,
        address: `counted-${mode}`,
        files: { "index.html": "<h1>Counted</h1>" },
      });
      for (const agent of ["Agent/1", "Agent/1", "Agent/2"])
        await (await fetch(`${origin(app.address)}/`, { headers: { "user-agent": agent } })).text();
      await apps.host.flushStats();
      const opens = await apps.context.db.select().from(dailyOpens).where(eq(dailyOpens.appId, app.id));
      const viewers = await apps.context.db.select().from(dailyViewers).where(eq(dailyViewers.appId, app.id));
      expect(opens.map((r) => r.opens)).toEqual([3]);
      expect(viewers).toHaveLength(2);
      expect(JSON.stringify(viewers)).not.toMatch(/127\.0\.0\.1|::1|Agent\//);
    });

    describe.skipIf(!hasChromium)("in headless Chromium", () => {
      let browser: Browser;
      beforeAll(async () => {
        browser = await launchChromium();
      }, 60_000);
      afterAll(async () => {
        await browser?.close();
      });

      test("sign in on the gateway, land on the private app; the app's origin never gets the gateway's cookie", async () => {
        const context = await browser.newContext();
        const page = await context.newPage();
        const pending: Promise<{ host: string; cookie: string }>[] = [];
        page.on("request", (request) => {
          pending.push(
            request
              .allHeaders()
              .then((headers) => ({ host: new URL(request.url()).host, cookie: headers.cookie ?? "" })),
          );
        });
        const appUrl = `${origin(`notes-${mode}`)}/list`;
        await page.goto(appUrl);
        expect(new URL(page.url()).pathname).toBe("/signin");
        await page.getByLabel("Email").fill(owner.email);
        await page.getByLabel("Password").fill(PASSWORD);
        await Promise.all([page.waitForURL(appUrl), page.getByRole("button", { name: "Sign in" }).click()]);
        expect(await page.locator("h1").innerText()).toBe("The list");
        await page.reload();
        expect(await page.locator("h1").innerText()).toBe("The list");

        const sent = await Promise.all(pending);
        const appHost = new URL(appUrl).host;
        const gatewayHost = new URL(hatch.baseUrl).host;
        expect(sent.some((r) => r.host === gatewayHost && r.cookie.includes("hatch_session="))).toBe(true);
        const toApp = sent.filter((r) => r.host === appHost);
        expect(toApp.length).toBeGreaterThanOrEqual(3);
        for (const request of toApp) expect(request.cookie).not.toMatch(/hatch_session|hatch_csrf/);
        expect(toApp.some((r) => r.cookie.startsWith("hatch_viewer="))).toBe(true);
        expect((await context.cookies(appUrl)).map((c) => c.name)).toEqual(["hatch_viewer"]);
        await context.close();
      });
    });
  });
}

function claimsOf(user: { id: string; email: string; name: string }): CallContextClaims {
  return {
    sub: user.id,
    email: user.email,
    name: user.name,
    permissions: [],
    scope: "read",
    client: { kind: "other", name: "test", elicitation: { form: false, url: false } },
    grant: "test",
    rid: "test",
  };
}
