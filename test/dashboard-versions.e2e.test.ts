import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { csrfOf, signedInJar } from "./support/cookies.ts";
import { joinOrg } from "./support/orgs.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

// Deploy history on an app's dashboard page over real HTTP: each version says who published it and from which client
// (an AI client by its name, the dashboard as "on the dashboard"); rollback works for the owner, and a member without
// rights on the app and a stranger can neither see the versions nor roll back.

const PASSWORD = "correct horse battery";
const files = (text: string) => [{ path: "index.html", content: `<h1>${text}</h1>` }];

for (const mode of MODES) {
  describe(`dashboard deploy history (${mode})`, () => {
    let hatch: TestHatch;
    let owner: Awaited<ReturnType<typeof userWithToken>>;
    let member: Awaited<ReturnType<typeof userWithToken>>;
    let stranger: Awaited<ReturnType<typeof userWithToken>>;
    let ownerAi: Client;
    let memberAi: Client;
    let address: string;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      const tag = `${mode}-${process.pid}`;
      owner = await userWithToken(hatch, { name: "Olga", email: `ver-owner-${tag}@example.com` });
      member = await userWithToken(hatch, { name: "Mo", email: `ver-member-${tag}@example.com` });
      stranger = await userWithToken(hatch, { name: "Sam", email: `ver-stranger-${tag}@example.com` });
      ownerAi = await connectClient(hatch, owner.accessToken, { name: "Zed Editor", version: "1.0.0" });
      memberAi = await connectClient(hatch, member.accessToken);
      await callOk(ownerAi, "org_setup", { action: "create", name: `Ver Co ${tag}` });
      await joinOrg(ownerAi, memberAi, member.email, { role: "member" });
      const first = await callOk<{ address: string }>(ownerAi, "publish", {
        name: `ver-app-${mode}`,
        visibility: "org",
        files: files("one"),
      });
      address = first.address;
      await callOk(ownerAi, "publish", { address, files: files("two") });
    }, 90_000);
    afterAll(async () => {
      await ownerAi?.close();
      await memberAi?.close();
      await hatch?.stop();
    });

    const signedIn = (email: string) => signedInJar(hatch.baseUrl, email, PASSWORD);
    const current = async () =>
      (await callOk<{ apps: { address: string; currentVersion: number | null }[] }>(ownerAi, "list_tools")).apps.find(
        (a) => a.address === address,
      )?.currentVersion;
    const versionItem = (body: string, n: number) =>
      new RegExp(`<li class="card" data-version="${n}">[\\s\\S]*?</li>`).exec(body)?.[0] ?? "";

    test("each version says who published it and from which client", async () => {
      const jar = await signedIn(owner.email);
      const page = await jar.fetch(`${hatch.baseUrl}/dashboard/apps/${address}`);
      expect(page.status).toBe(200);
      const body = await page.text();
      for (const n of [1, 2]) expect(versionItem(body, n)).toContain(`by ${owner.email} via Zed Editor`);
    });

    test("a member without rights on the app and a stranger cannot see the versions or roll back", async () => {
      for (const who of [member, stranger]) {
        const jar = await signedIn(who.email);
        const page = await jar.fetch(`${hatch.baseUrl}/dashboard/apps/${address}`);
        expect([403, 404]).toContain(page.status);
        expect(await page.text()).not.toContain("data-version=");
        const csrf = csrfOf(await (await jar.fetch(`${hatch.baseUrl}/dashboard`)).text());
        const rolled = await jar.post(`${hatch.baseUrl}/dashboard/apps/${address}/rollback`, { csrf, version: "1" });
        expect([400, 403, 404]).toContain(rolled.status);
        expect(await current()).toBe(2);
      }
    });

    test("the owner rolls back to version 1 from the page", async () => {
      const jar = await signedIn(owner.email);
      const csrf = csrfOf(await (await jar.fetch(`${hatch.baseUrl}/dashboard/apps/${address}`)).text());
      const rolled = await jar.post(`${hatch.baseUrl}/dashboard/apps/${address}/rollback`, { csrf, version: "1" });
      expect(rolled.status).toBe(303);
      expect(await current()).toBe(1);
      const body = await (await jar.fetch(`${hatch.baseUrl}/dashboard/apps/${address}`)).text();
      expect(versionItem(body, 1)).toContain("(current)");
      expect(versionItem(body, 2)).toContain("Roll back to version 2");
    });
  });
}
