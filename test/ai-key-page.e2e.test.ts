import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppsService } from "@hatch/apps";
import { eq } from "drizzle-orm";
import { aiKeys } from "../services/apps/src/db/schema.ts";
import { aiKeyAad } from "../services/apps/src/secrets/sealed.ts";
import { seedApp } from "../services/apps/test/support/seed.ts";
import { accountOf } from "./support/ai.ts";
import { csrfOf, HostCookieJar } from "./support/cookies.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

// The dashboard page where a person types an AI key, over real HTTP like a browser: sign-in first, CSRF on the form,
// the key stored sealed (the row does not contain it) and never shown again.

const PASSWORD = "correct horse battery";
const KEY = "sk-typed-on-the-page-7f3a9c";

for (const mode of EMBEDDED_MODES) {
  describe(`AI key page (${mode})`, () => {
    let hatch: TestHatch;
    let apps: AppsService;
    let person: Awaited<ReturnType<typeof userWithToken>>;
    const address = `page-ai-${mode}`;

    beforeAll(async () => {
      hatch = await startTestHatch(mode, {
        serviceEnv: { AI_PROVIDERS: "fake=http://127.0.0.1:9/v1,other=http://127.0.0.1:9/v2" },
      });
      apps = hatch.services.get("apps") as AppsService;
      person = await userWithToken(hatch, { name: "Paige", email: `paige-${mode}-${process.pid}@example.com` });
      await seedApp(apps.context, {
        address,
        owner: { id: person.id, email: person.email },
        accountId: await accountOf(hatch, person),
        visibility: "private",
        files: { "index.html": "x" },
      });
    }, 90_000);
    afterAll(async () => {
      await hatch?.stop();
    });

    async function signedIn(path: string): Promise<HostCookieJar> {
      const jar = new HostCookieJar();
      const first = await jar.fetch(`${hatch.baseUrl}${path}`);
      expect(first.status).toBe(303);
      const signIn = new URL(first.headers.get("location")!, hatch.baseUrl);
      expect(signIn.pathname).toBe("/signin");
      expect(signIn.searchParams.get("next")).toBe(path);
      const form = await jar.fetch(signIn.href);
      const done = await jar.post(`${hatch.baseUrl}/signin`, {
        email: person.email,
        password: PASSWORD,
        next: path,
        csrf: csrfOf(await form.text()),
      });
      expect(done.status).toBe(303);
      expect(done.headers.get("location")).toEndWith(path);
      return jar;
    }

    test("signed in, the page says whose key it is and offers the providers, the chosen one preselected", async () => {
      const path = `/dashboard/ai-keys?scope=tool&app=${address}&provider=other`;
      const jar = await signedIn(path);
      const page = await jar.fetch(`${hatch.baseUrl}${path}`);
      expect(page.status).toBe(200);
      const body = await page.text();
      expect(body).toContain(`Whose key: <strong>${address} (${address})</strong>`);
      expect(body).toContain(`Only the app ${address} uses this key`);
      expect(body).toContain('<option value="fake">fake</option><option value="other" selected>other</option>');
      expect(body).toContain('<input type="password" name="key" autocomplete="off"');
      expect(body).toContain("No keys yet.");
      expect(body).toContain('name="csrf"');
    });

    test("the form needs its CSRF token; with it the key is stored sealed and never shown again", async () => {
      const path = "/dashboard/ai-keys?scope=mine";
      const jar = await signedIn(path);
      const page = await (await jar.fetch(`${hatch.baseUrl}${path}`)).text();
      expect(page).toContain(`Whose key: <strong>Paige (${person.email})</strong>`);
      const forged = await jar.post(`${hatch.baseUrl}${path}`, { csrf: "forged", provider: "fake", key: KEY });
      expect(forged.status).toBe(403);
      expect(await apps.context.db.select().from(aiKeys).where(eq(aiKeys.ownerId, person.id))).toEqual([]);

      const huge = await jar.post(`${hatch.baseUrl}${path}`, {
        csrf: csrfOf(page),
        provider: "fake",
        key: "k".repeat(20_000),
      });
      expect(huge.status).toBe(413);
      expect(await apps.context.db.select().from(aiKeys).where(eq(aiKeys.ownerId, person.id))).toEqual([]);

      const short = await jar.post(`${hatch.baseUrl}${path}`, { csrf: csrfOf(page), provider: "fake", key: "short" });
      expect(short.status).toBe(400);
      expect(await short.text()).toContain("Paste the whole key");

      // Saved: back to the page (303), so a reload does not send the key again; the page says so once.
      const saved = await jar.post(`${hatch.baseUrl}${path}`, { csrf: csrfOf(page), provider: "fake", key: KEY });
      expect(saved.status).toBe(303);
      expect(saved.headers.get("location")).toBe(path);
      const answer = await (await jar.fetch(`${hatch.baseUrl}${path}`)).text();
      expect(answer).toContain("Saved. Tell your AI the key is added.");
      expect(await (await jar.fetch(`${hatch.baseUrl}${path}`)).text()).not.toContain("Saved.");
      expect(answer).toMatch(/<td[^>]*>fake<\/td>/);
      expect(answer).toContain(`>${person.email}</td>`);
      expect(answer).not.toContain(KEY);

      const [row] = await apps.context.db.select().from(aiKeys).where(eq(aiKeys.ownerId, person.id));
      expect(row).toMatchObject({ scope: "mine", provider: "fake", appId: null, addedBy: person.id });
      expect(JSON.stringify(row)).not.toContain(KEY);
      expect(JSON.stringify(row)).not.toContain(Buffer.from(KEY).toString("base64").slice(0, 12));
      expect(
        apps.context.sealer.open({ keyId: row!.keyId, sealed: row!.sealed }, aiKeyAad("mine", person.id, "fake")),
      ).toBe(KEY);
      // Bound to its owner: the same sealed value does not open as someone else's key.
      expect(() =>
        apps.context.sealer.open({ keyId: row!.keyId, sealed: row!.sealed }, aiKeyAad("mine", "someone-else", "fake")),
      ).toThrow();

      const again = await (await jar.fetch(`${hatch.baseUrl}${path}`)).text();
      expect(again).not.toContain(KEY);
      const client = await connectClient(hatch, person.accessToken);
      const listed = await callOk<{ keys: { provider: string; addedBy: string }[] }>(client, "ai_key", {
        scope: "mine",
      });
      await client.close();
      expect(listed.keys).toEqual([expect.objectContaining({ provider: "fake", addedBy: person.email })]);
    });

    test("the page refuses what the tool refuses: a company key in a personal account, another person's app, a bad link", async () => {
      const jar = await signedIn("/dashboard/ai-keys?scope=company");
      const company = await jar.fetch(`${hatch.baseUrl}/dashboard/ai-keys?scope=company`);
      expect(company.status).toBe(403);
      expect(await company.text()).toContain("only in a company account");
      const other = await jar.fetch(`${hatch.baseUrl}/dashboard/ai-keys?scope=tool&app=not-hers`);
      expect(other.status).toBe(404);
      const bad = await jar.fetch(`${hatch.baseUrl}/dashboard/ai-keys?scope=everyone`);
      expect(bad.status).toBe(400);
      const unknown = await jar.post(`${hatch.baseUrl}/dashboard/ai-keys?scope=mine`, {
        csrf: csrfOf(await (await jar.fetch(`${hatch.baseUrl}/dashboard/ai-keys?scope=mine`)).text()),
        provider: "nobody",
        key: KEY,
      });
      expect(unknown.status).toBe(400);
      expect(await unknown.text()).toContain("fake, other");
    });
  });
}
