import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { csrfOf, HostCookieJar, signInWithForm } from "./support/cookies.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

// The dashboard over real HTTP like a browser without JavaScript: sign-in lands on it, a form without its CSRF token
// changes nothing, a form that worked redirects to its page (which says what happened once), another person's app is
// exactly as missing as one that does not exist, unknown paths get a page.

const PASSWORD = "correct horse battery";
const files = (text: string) => [{ path: "index.html", content: `<h1>${text}</h1>` }];

for (const mode of EMBEDDED_MODES) {
  describe(`dashboard over HTTP (${mode})`, () => {
    let hatch: TestHatch;
    let alice: Awaited<ReturnType<typeof userWithToken>>;
    let bob: Awaited<ReturnType<typeof userWithToken>>;
    let aliceAi: Client;
    let bobAi: Client;
    const mine = `dash-http-a-${mode}`;
    const theirs = `dash-http-b-${mode}`;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      alice = await userWithToken(hatch, { name: "Alice", email: `dash-alice-${mode}-${process.pid}@example.com` });
      bob = await userWithToken(hatch, { name: "Bob", email: `dash-bob-${mode}-${process.pid}@example.com` });
      aliceAi = await connectClient(hatch, alice.accessToken);
      bobAi = await connectClient(hatch, bob.accessToken);
      await callOk(aliceAi, "publish", { name: mine, visibility: "private", files: files("a") });
      await callOk(bobAi, "publish", { name: theirs, visibility: "private", files: files("b") });
    }, 90_000);
    afterAll(async () => {
      await aliceAi?.close();
      await bobAi?.close();
      await hatch?.stop();
    });

    async function signedIn(email: string): Promise<HostCookieJar> {
      const jar = new HostCookieJar();
      const done = await signInWithForm(jar, `${hatch.baseUrl}/signin`, email, PASSWORD);
      // No pending authorization: sign-in lands on the dashboard.
      expect(done.headers.get("location")).toBe("/dashboard");
      return jar;
    }

    /** The jar's cookies for `url` but the notice, as a Cookie header (to send one of the test's own beside them). */
    const cookiesOf = (jar: HostCookieJar, url: string) =>
      jar
        .namesFor(url)
        .filter((name) => name !== "hatch_notice")
        .map((name) => `${name}=${jar.valueFor(url, name)}`)
        .join("; ");

    /** The app's address as list_tools' text names it ("- <name> (<address>): …"). */
    const addressOf = async (ai: Client, name: string) => {
      const text = textOf(await ai.callTool({ name: "list_tools", arguments: { include: "mine" } }));
      const line = text.split("\n").find((l) => l.startsWith(`- ${name} (`))!;
      return line.slice(`- ${name} (`.length, line.indexOf("): "));
    };

    test("signed out, the dashboard sends to sign-in and back", async () => {
      const response = await new HostCookieJar().fetch(`${hatch.baseUrl}/dashboard`);
      expect(response.status).toBe(303);
      expect(response.headers.get("location")).toBe(`/signin?next=${encodeURIComponent("/dashboard")}`);
    });

    test("sign-in lands on the dashboard, which lists the person's apps and not another's", async () => {
      const jar = await signedIn(alice.email);
      const page = await jar.fetch(`${hatch.baseUrl}/dashboard`);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
      const body = await page.text();
      expect(body).toContain(`data-address="${await addressOf(aliceAi, mine)}"`);
      expect(body).not.toContain(theirs);
    });

    test("another person's app is not found: its page and its actions", async () => {
      const address = await addressOf(bobAi, theirs);
      const jar = await signedIn(alice.email);
      const page = await jar.fetch(`${hatch.baseUrl}/dashboard/apps/${address}`);
      expect(page.status).toBe(404);
      const body = await page.text();
      expect(body).toContain(`You have no app at the address &quot;${address}&quot;`);
      const missing = await jar.fetch(`${hatch.baseUrl}/dashboard/apps/no-such-app-${mode}`);
      expect(missing.status).toBe(404);
      // Deleting it with a valid form is refused the same way, and it stays.
      const csrf = csrfOf(await (await jar.fetch(`${hatch.baseUrl}/dashboard`)).text());
      const del = await jar.post(`${hatch.baseUrl}/dashboard/apps/${address}/delete`, { csrf, typed: address });
      expect(del.status).toBe(404);
      expect(await addressOf(bobAi, theirs)).toBe(address);
    });

    test("a form without its CSRF token changes nothing", async () => {
      const address = await addressOf(aliceAi, mine);
      const jar = await signedIn(alice.email);
      const refused = await jar.post(`${hatch.baseUrl}/dashboard/apps/${address}/delete`, { typed: address });
      expect(refused.status).toBe(403);
      const wrong = await jar.post(`${hatch.baseUrl}/dashboard/apps/${address}/share`, {
        csrf: "not-the-token",
        add: "someone@example.com",
      });
      expect(wrong.status).toBe(403);
      expect(await addressOf(aliceAi, mine)).toBe(address);
      const shared = await callOk<{ apps: { address: string; visibility: string }[] }>(aliceAi, "list_tools");
      expect(shared.apps.find((a) => a.address === address)?.visibility).toBe("private");
    });

    test("typing the wrong address deletes nothing", async () => {
      const address = await addressOf(aliceAi, mine);
      const jar = await signedIn(alice.email);
      const csrf = csrfOf(await (await jar.fetch(`${hatch.baseUrl}/dashboard/apps/${address}`)).text());
      const response = await jar.post(`${hatch.baseUrl}/dashboard/apps/${address}/delete`, { csrf, typed: "nope" });
      expect(response.status).toBe(400);
      expect(await response.text()).toContain(`Type the address ${address} exactly`);
      expect(await addressOf(aliceAi, mine)).toBe(address);
    });

    test("a form that worked answers 303 to its page, which says what happened once; the words cannot be forged", async () => {
      const address = await addressOf(aliceAi, mine);
      const jar = await signedIn(alice.email);
      const page = `${hatch.baseUrl}/dashboard/apps/${address}`;
      const guest = `guest-prg-${mode}@example.com`;
      const shared = await jar.post(`${page}/share`, {
        csrf: csrfOf(await (await jar.fetch(page)).text()),
        add: guest,
      });
      expect(shared.status).toBe(303);
      expect(shared.headers.get("location")).toBe(`/dashboard/apps/${address}`);
      const status = (body: string) => /<p class="card" role="status">([\s\S]*?)<\/p>/.exec(body)?.[1] ?? null;
      const first = await (await jar.fetch(page)).text();
      expect(status(first)).toContain(guest);
      // Shown once: the page after it (a reload) has no notice, and the person is still there.
      const again = await (await jar.fetch(page)).text();
      expect(status(again)).toBeNull();
      expect(again).toContain(guest);
      // Another person's notice says nothing to Bob; one made without the server's key says nothing to Alice.
      const sharedAgain = await jar.post(`${page}/share`, { csrf: csrfOf(first), add: `second-${guest}` });
      expect(sharedAgain.status).toBe(303);
      const alicesNotice = jar.valueFor(page, "hatch_notice");
      expect(alicesNotice).toBeTruthy();
      const bobJar = await signedIn(bob.email);
      const asBob = await fetch(`${hatch.baseUrl}/dashboard`, {
        headers: { cookie: `${cookiesOf(bobJar, page)}; hatch_notice=${alicesNotice}` },
      });
      expect(asBob.status).toBe(200);
      expect(status(await asBob.text())).toBeNull();
      const claims = { u: alice.id, t: "Your account is locked: call +1 555 0100", x: Date.now() + 60_000 };
      const forged = `${Buffer.from(JSON.stringify(claims)).toString("base64url")}.${"A".repeat(43)}`;
      const asForged = await fetch(page, { headers: { cookie: `${cookiesOf(jar, page)}; hatch_notice=${forged}` } });
      expect(asForged.status).toBe(200);
      const forgedBody = await asForged.text();
      expect(status(forgedBody)).toBeNull();
      expect(forgedBody).not.toContain("Your account is locked");
    });

    test("an unknown path gets a styled 404 page with a way back", async () => {
      const anonymous = await new HostCookieJar().fetch(`${hatch.baseUrl}/no/such/page`);
      expect(anonymous.status).toBe(404);
      expect(anonymous.headers.get("content-type")).toContain("text/html");
      const body = await anonymous.text();
      expect(body).toContain("<h1>Page not found</h1>");
      expect(body).toContain('<a href="/">');
      const jar = await signedIn(alice.email);
      const signedInPage = await (await jar.fetch(`${hatch.baseUrl}/dashboard/nothing-here`)).text();
      expect(signedInPage).toContain('<a href="/dashboard">your dashboard</a>');
    });
  });
}
