import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { csrfOf, HostCookieJar, signInWithForm } from "./support/cookies.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { joinOrg } from "./support/orgs.ts";
import { MODES } from "./support/servers.ts";

// A version's page over real HTTP: who published it and from which client, its files (paths, sizes, types), Roll back
// when it is not the current one. Only the owner sees it: people in the organization are told whose it is, a stranger
// gets the same page as for an app that does not exist.

const PASSWORD = "correct horse battery";

for (const mode of MODES) {
  describe(`a version's files on the dashboard (${mode})`, () => {
    let hatch: TestHatch;
    const clients: Client[] = [];
    const emails = { owner: "", manager: "", member: "", stranger: "" };
    let address = "";

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      const ai: Record<string, Client> = {};
      for (const role of ["owner", "manager", "member", "stranger"] as const) {
        const user = await userWithToken(hatch, { name: `Files ${role}`, email: `files-${role}-${mode}@example.com` });
        emails[role] = user.email;
        ai[role] = await connectClient(hatch, user.accessToken, { name: "Zed Editor", version: "1.0.0" });
        clients.push(ai[role]!);
      }
      await callOk(ai.owner!, "org_setup", { action: "create", name: `Files ${mode}` });
      await joinOrg(ai.owner!, ai.manager!, emails.manager, { role: "manager" });
      await joinOrg(ai.owner!, ai.member!, emails.member);
      const first = await callOk<{ address?: string }>(ai.owner!, "publish", {
        name: `files-${mode}`,
        visibility: "org",
        files: [
          { path: "index.html", content: "<h1>One</h1><script src=app.js></script>" },
          { path: "app.js", content: "console.log('one')" },
        ],
      });
      address = first.address!;
      await callOk(ai.owner!, "publish", {
        address,
        files: [{ path: "index.html", content: "<h1>Two</h1>" }],
      });
    }, 90_000);
    afterAll(async () => {
      for (const client of clients) await client.close();
      await hatch?.stop();
    });

    async function signedIn(email: string): Promise<HostCookieJar> {
      const jar = new HostCookieJar();
      await signInWithForm(jar, `${hatch.baseUrl}/signin`, email, PASSWORD);
      return jar;
    }
    const versionUrl = (n: number | string) => `${hatch.baseUrl}/dashboard/apps/${address}/versions/${n}`;

    test("the owner: an old version's files, who published it and how, and Roll back; the current one says so", async () => {
      const jar = await signedIn(emails.owner);
      const app = await (await jar.fetch(`${hatch.baseUrl}/dashboard/apps/${address}`)).text();
      expect(app).toContain(`href="/dashboard/apps/${address}/versions/1"`);

      const old = await jar.fetch(versionUrl(1));
      expect(old.status).toBe(200);
      const page = await old.text();
      expect(page).toContain("Version 1 of");
      expect(page).toContain(`by ${emails.owner} via Zed Editor`);
      expect(page).toContain("2 files");
      expect(page.indexOf("<code>app.js</code>")).toBeGreaterThan(-1);
      expect(page.indexOf("<code>app.js</code>")).toBeLessThan(page.indexOf("<code>index.html</code>"));
      expect(page).toContain("Roll back to version 1");
      // The contents are never on the page.
      expect(page).not.toContain("console.log");

      const current = await (await jar.fetch(versionUrl(2))).text();
      expect(current).toContain("This is the version visitors see now.");
      expect(current).not.toContain("Roll back to version 2");

      const rolled = await jar.post(`${hatch.baseUrl}/dashboard/apps/${address}/rollback`, {
        csrf: csrfOf(page),
        version: "1",
      });
      expect(rolled.status).toBe(303);
      expect(await (await jar.fetch(versionUrl(1))).text()).toContain("This is the version visitors see now.");
    }, 60_000);

    test("a version that does not exist, and one that is not a number, are not found", async () => {
      const jar = await signedIn(emails.owner);
      expect((await jar.fetch(versionUrl(9))).status).toBe(404);
      expect((await jar.fetch(versionUrl("abc"))).status).toBe(404);
      expect((await jar.fetch(versionUrl("0"))).status).toBe(404);
    }, 60_000);

    test("only the owner: a manager and a member are told whose it is; a stranger gets the missing app's page", async () => {
      for (const role of ["manager", "member"] as const) {
        const answer = await (await signedIn(emails[role])).fetch(versionUrl(1));
        expect(answer.status).toBe(403);
        expect(await answer.text()).not.toContain("<code>app.js</code>");
      }
      const stranger = await signedIn(emails.stranger);
      const theirs = await stranger.fetch(versionUrl(1));
      const missing = await stranger.fetch(`${hatch.baseUrl}/dashboard/apps/no-such-app-${mode}/versions/1`);
      expect(theirs.status).toBe(404);
      expect(missing.status).toBe(404);
      const words = (page: string) =>
        /role="alert">([^<]*)</.exec(page)?.[1]?.replace(/no-such-app-\w+|files-\w+/g, "…");
      expect(words(await theirs.text())).toBe(words(await missing.text()));
    }, 60_000);
  });
}
