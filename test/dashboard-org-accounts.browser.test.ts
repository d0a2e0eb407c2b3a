import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Browser, Page } from "playwright-core";
import { members } from "../services/orgs/src/db/schema.ts";
import { PAGE_SIZES, pageProblems } from "./support/axe.ts";
import { CHROMIUM, hasChromium, launchChromium } from "./support/chromium.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { joinOrg } from "./support/orgs.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

// /dashboard/org with the account switcher in headless Chromium: Pat, a manager of Alpha (where the AI acts) and a
// member of Beta, switches to their personal account with the switcher, sees the page say so with both organizations,
// and presses "Show Beta" to see Beta's page. Each of these pages (Alpha as a manager, the personal account's, Beta as
// a member) passes axe-core with no sideways scroll at 1280 and 390 px, light and dark. Pat's place in Beta is written
// straight into orgs' table, as in test/dashboard-org-accounts.e2e.test.ts (the product joins one at a time).

const TEST_TIMEOUT_MS = 120_000;
const PASSWORD = "correct horse battery";

for (const mode of EMBEDDED_MODES) {
  const name = `/dashboard/org follows the account switcher in a real browser (${mode})`;
  describe.skipIf(!hasChromium)(hasChromium ? name : `${name} (SKIPPED: ${CHROMIUM} is missing)`, () => {
    let hatch: TestHatch;
    let browser: Browser;
    let page: Page;
    let clients: Client[] = [];
    const tag = `${process.pid}`;
    const alpha = `Alpha Browser ${tag}`;
    const beta = `Beta Browser ${tag}`;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      const ada = await userWithToken(hatch, { name: "Ada Alpha", email: `org-browser-ada-${tag}@example.com` });
      const ben = await userWithToken(hatch, { name: "Ben Beta", email: `org-browser-ben-${tag}@example.com` });
      const pat = await userWithToken(hatch, { name: "Pat Both", email: `org-browser-pat-${tag}@example.com` });
      const [adaAi, benAi, patAi] = await Promise.all(
        [ada, ben, pat].map((person) => connectClient(hatch, person.accessToken)),
      );
      clients = [adaAi!, benAi!, patAi!];
      await callOk(adaAi!, "org_setup", { action: "create", name: alpha });
      await joinOrg(adaAi!, patAi!, pat.email, { role: "manager" });
      await callOk(adaAi!, "org_invite", { emails: [`org-browser-guest-${tag}@example.com`], role: "member" });
      const created = await callOk<{ org: { id: string } }>(benAi!, "org_setup", { action: "create", name: beta });
      await hatch.databases
        .get("orgs")!
        .insert(members)
        .values({ accountId: created.org.id, userId: pat.id, role: "member", permissions: [] });
      browser = await launchChromium();
      page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
      await page.goto(`${hatch.baseUrl}/signin`);
      await page.getByLabel("Email").fill(pat.email);
      await page.getByLabel("Password").fill(PASSWORD);
      await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Sign in" }).click()]);
    }, TEST_TIMEOUT_MS);
    afterAll(async () => {
      await Promise.all(clients.map((client) => client.close()));
      await browser?.close();
      await hatch?.stop();
    }, TEST_TIMEOUT_MS);

    const switchTo = async (label: string) => {
      await page.getByLabel("Show the account").selectOption({ label });
      await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Switch" }).click()]);
    };
    const heading = () => page.getByRole("heading", { level: 1 }).textContent();

    test(
      "the switcher shows the personal account's page; Show Beta switches to Beta's",
      async () => {
        await page.goto(`${hatch.baseUrl}/dashboard/org`);
        expect(await heading()).toBe(alpha);
        expect(await page.getByRole("button", { name: "Send invitations" }).count()).toBe(1);
        await switchTo("Personal");
        expect(page.url()).toBe(`${hatch.baseUrl}/dashboard/org`);
        expect(await heading()).toBe("Your personal account");
        expect(await page.getByRole("heading", { name: "Your organizations" }).count()).toBe(1);
        expect(await page.getByRole("button", { name: `Show ${alpha}` }).count()).toBe(1);
        await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: `Show ${beta}` }).click()]);
        expect(await heading()).toBe(beta);
        expect(await page.locator('[data-member="org-browser-ben-' + tag + '@example.com"]').count()).toBe(1);
        expect(await page.getByRole("button", { name: "Send invitations" }).count()).toBe(0);
        await switchTo(`${alpha} (organization)`);
        expect(await heading()).toBe(alpha);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "axe-core finds nothing and nothing scrolls sideways: an organization as manager and as member, the personal page",
      async () => {
        const problems: string[] = [];
        const look = async (label: string, size: (typeof PAGE_SIZES)[number], open: () => Promise<unknown>) => {
          await open();
          problems.push(...(await pageProblems(page, label, size)));
        };
        const orgPage = async () => {
          const response = await page.goto(`${hatch.baseUrl}/dashboard/org`);
          if (response?.status() !== 200) problems.push(`/dashboard/org: status ${response?.status()}`);
        };
        for (const size of PAGE_SIZES) {
          await page.setViewportSize({ width: size.width, height: size.height });
          await page.emulateMedia({ colorScheme: size.scheme });
          await look("Alpha (manager)", size, orgPage);
          await look("personal account", size, async () => {
            await switchTo("Personal");
            await orgPage();
          });
          await look("Beta (member)", size, async () => {
            await switchTo(`${beta} (organization)`);
            await orgPage();
          });
          await switchTo(`${alpha} (organization)`);
        }
        expect(problems).toEqual([]);
      },
      TEST_TIMEOUT_MS,
    );
  });
}
