import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppsService } from "@hatch/apps";
import { seedApp, seedVersion } from "../services/apps/test/support/seed.ts";
import { HostCookieJar, signInToApp } from "./support/cookies.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { joinOrg } from "./support/orgs.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

// Issue 27: a non-current version's preview on its own origin `v<N>--<address>.<apps domain>` (one label below the apps
// domain, so its wildcard certificate covers it), for the owner only (the live viewer check, a cookie of its own bound
// to that host), static files only, never cached or indexed.
// What HTTP says: the embedded default is enough (test/support/servers.ts).
const TEST_TIMEOUT_MS = 30_000;

for (const mode of EMBEDDED_MODES) {
  describe(`version preview (${mode})`, () => {
    let hatch: TestHatch;
    let alice: Awaited<ReturnType<typeof userWithToken>>;
    let bob: Awaited<ReturnType<typeof userWithToken>>;
    let carol: Awaited<ReturnType<typeof userWithToken>>;
    const address = `notes-${mode}`;
    const appUrl = () => `${hatch.appHostUrl.replace("//", `//${address}.`)}/`;
    const previewUrl = (version: number) => `${hatch.appHostUrl.replace("//", `//v${version}--${address}.`)}/`;
    const aliceJar = new HostCookieJar();

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      const apps = hatch.services.get("apps") as AppsService;
      alice = await userWithToken(hatch, { name: "Alice" });
      bob = await userWithToken(hatch, { name: "Bob" });
      carol = await userWithToken(hatch, { name: "Carol" });
      const aliceAi = await connectClient(hatch, alice.accessToken);
      const bobAi = await connectClient(hatch, bob.accessToken);
      const { org } = await callOk<{ org: { id: string } }>(aliceAi, "org_setup", {
        action: "create",
        name: `Preview ${mode}`,
      });
      await joinOrg(aliceAi, bobAi, bob.email);
      await Promise.all([aliceAi.close(), bobAi.close()]);
      // Shared with Carol by email; Bob sees it as a member of the organization.
      const app = await seedApp(apps.context, {
        owner: { id: alice.id, email: alice.email },
        accountId: org.id,
        address,
        visibility: "people",
        people: [carol.email],
        files: { "index.html": "<h1>Version one</h1>", "app.js": "console.log(1)" },
      });
      await seedVersion(apps.context, app.id, { "index.html": "<h1>Version two</h1>" });
    }, 90_000);
    afterAll(async () => {
      await hatch?.stop();
    });

    test(
      "the owner signs in through the ticket and sees version 1 while the app serves version 2",
      async () => {
        await signInToApp(hatch, aliceJar, previewUrl(1), alice.email);
        expect(aliceJar.namesFor(previewUrl(1))).toEqual(["hatch_preview"]);
        const page = await aliceJar.fetch(previewUrl(1));
        expect(page.status).toBe(200);
        expect(await page.text()).toBe("<h1>Version one</h1>");
        expect(page.headers.get("cache-control")).toBe("no-store");
        expect(page.headers.get("x-robots-tag")).toBe("noindex");
        const script = await aliceJar.fetch(`${previewUrl(1)}app.js`);
        expect(await script.text()).toBe("console.log(1)");
        expect(script.headers.get("cache-control")).toBe("no-store");
        expect(script.headers.get("x-robots-tag")).toBe("noindex");

        await signInToApp(hatch, aliceJar, appUrl(), alice.email);
        const current = await aliceJar.fetch(appUrl());
        expect(await current.text()).toBe("<h1>Version two</h1>");
        expect(current.headers.get("x-robots-tag")).toBeNull();
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "the preview is one label below the apps domain; the two-level form of before names nothing",
      async () => {
        expect(new URL(previewUrl(1)).hostname.split(".").length).toBe(new URL(appUrl()).hostname.split(".").length);
        const before = `${hatch.appHostUrl.replace("//", `//${address}.v1.preview.`)}/`;
        const answer = await aliceJar.fetch(before);
        expect(answer.status).toBe(404);
        expect(await answer.text()).not.toContain("Version one");
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "no data, files or server code on a preview: 403, even for the owner",
      async () => {
        for (const path of ["_hatch/db/notes", "_hatch/files/b/x", "_hatch/ai/chat", "api", "api/x"]) {
          const answer = await aliceJar.fetch(`${previewUrl(1)}${path}`);
          expect(answer.status, path).toBe(403);
          expect(answer.headers.get("cache-control")).toBe("no-store");
        }
        const posted = await aliceJar.fetch(`${previewUrl(1)}_hatch/db/notes`, { method: "POST", body: "{}" });
        expect(posted.status).toBe(403);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "a version that does not exist is the missing app's 404",
      async () => {
        await signInToApp(hatch, aliceJar, previewUrl(9), alice.email);
        const missing = await aliceJar.fetch(previewUrl(9));
        expect(missing.status).toBe(404);
        expect(await missing.text()).toContain("App not found");
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "the app's cookie does not open the preview, nor the preview's cookie the app",
      async () => {
        const appCookie = aliceJar.valueFor(appUrl(), "hatch_viewer")!;
        const previewCookie = aliceJar.valueFor(previewUrl(1), "hatch_preview")!;
        expect(appCookie).toBeTruthy();
        expect(previewCookie).toBeTruthy();
        const isSignIn = (answer: Response) => {
          expect(answer.status).toBe(302);
          expect(new URL(answer.headers.get("location")!).pathname).toBe("/apps/signin");
        };
        for (const cookie of [`hatch_viewer=${appCookie}`, `hatch_preview=${appCookie}`])
          isSignIn(await fetch(previewUrl(1), { headers: { cookie }, redirect: "manual" }));
        for (const cookie of [`hatch_viewer=${previewCookie}`, `hatch_preview=${previewCookie}`])
          isSignIn(await fetch(appUrl(), { headers: { cookie }, redirect: "manual" }));
        // Another version's preview is another host: version 1's cookie does not open it either.
        isSignIn(
          await fetch(previewUrl(2), { headers: { cookie: `hatch_preview=${previewCookie}` }, redirect: "manual" }),
        );
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "an anonymous visitor is sent to sign in with the version; after it a member and a shared person get 404",
      async () => {
        const anonymous = await fetch(previewUrl(1), { redirect: "manual" });
        expect(anonymous.status).toBe(302);
        const signIn = new URL(anonymous.headers.get("location")!);
        expect(signIn.origin + signIn.pathname).toBe(`${hatch.baseUrl}/apps/signin`);
        expect(signIn.searchParams.get("app")).toBe(address);
        expect(signIn.searchParams.get("version")).toBe("1");
        expect(anonymous.headers.get("x-robots-tag")).toBe("noindex");

        for (const person of [bob, carol]) {
          const jar = new HostCookieJar();
          await signInToApp(hatch, jar, previewUrl(1), person.email);
          const refused = await jar.fetch(previewUrl(1));
          expect(refused.status, person.email).toBe(404);
          const text = await refused.text();
          expect(text).toContain("App not found");
          expect(text).not.toContain("Version one");
        }
        // Carol can open the app itself: the share is real, the preview is the owner's only.
        const carolJar = new HostCookieJar();
        await signInToApp(hatch, carolJar, appUrl(), carol.email);
        expect(await (await carolJar.fetch(appUrl())).text()).toBe("<h1>Version two</h1>");
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "the dashboard's version page links a non-current version's preview",
      async () => {
        const jar = new HostCookieJar();
        await signInToApp(hatch, jar, appUrl(), alice.email);
        const old = await jar.fetch(`${hatch.baseUrl}/dashboard/apps/${address}/versions/1`);
        expect(old.status).toBe(200);
        expect(await old.text()).toContain(`href="${previewUrl(1)}"`);
        const current = await jar.fetch(`${hatch.baseUrl}/dashboard/apps/${address}/versions/2`);
        expect(current.status).toBe(200);
        const currentPage = await current.text();
        expect(currentPage).not.toContain(`//v2--${address}.`);
        expect(currentPage).not.toContain("Preview version");
      },
      TEST_TIMEOUT_MS,
    );
  });
}
