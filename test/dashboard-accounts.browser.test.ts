import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Browser, Page } from "playwright-core";
import { PAGE_SIZES, pageProblems } from "./support/axe.ts";
import { CHROMIUM, hasChromium, launchChromium } from "./support/chromium.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

// The account switcher, billing in words and numbers, and the domains page's find, buy and organization address in
// headless Chromium: the owner of an organization switches to their personal account with the switcher, pays for Pro
// with the button that says "Pay $12 a month" and sees the plan in words, the usage bars and the receipt; then each of
// these pages (apps list in both accounts, billing in both, domains with search results and the organization's
// address, a purchase's confirm step) passes axe-core with no sideways scroll at 1280 and 390 px, light and dark.

const TEST_TIMEOUT_MS = 120_000;
const PASSWORD = "correct horse battery";
const files = (text: string) => [{ path: "index.html", content: `<h1>${text}</h1>` }];

for (const mode of EMBEDDED_MODES) {
  const name = `account switcher, billing and domains pages in a real browser (${mode})`;
  describe.skipIf(!hasChromium)(hasChromium ? name : `${name} (SKIPPED: ${CHROMIUM} is missing)`, () => {
    let hatch: TestHatch;
    let browser: Browser;
    let page: Page;
    let ai: Client;
    const tag = `${process.pid}`;
    const orgName = `Browser Co ${tag}`;

    beforeAll(async () => {
      hatch = await startTestHatch(mode, { serviceEnv: { SIMULATED_REGISTRAR_STEP_MS: "40" } });
      const owner = await userWithToken(hatch, { name: "Olivia Owner", email: `acc-browser-${tag}@example.com` });
      ai = await connectClient(hatch, owner.accessToken);
      await callOk(ai, "publish", { name: `mine-${tag}`, visibility: "private", files: files("mine") });
      await callOk(ai, "org_setup", { action: "create", name: orgName });
      await callOk(ai, "publish", { name: `ours-${tag}`, visibility: "org", files: files("ours") });
      await callOk(ai, "company_domain_set", { action: "set", domain: `apps.browserco-${tag}.test` });
      browser = await launchChromium();
      page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
      await page.goto(`${hatch.baseUrl}/signin`);
      await page.getByLabel("Email").fill(owner.email);
      await page.getByLabel("Password").fill(PASSWORD);
      await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Sign in" }).click()]);
    }, TEST_TIMEOUT_MS);
    afterAll(async () => {
      await ai?.close();
      await browser?.close();
      await hatch?.stop();
    }, TEST_TIMEOUT_MS);

    const switchTo = async (label: string) => {
      await page.getByLabel("Show the account").selectOption({ label });
      await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Switch" }).click()]);
    };

    test(
      "the switcher shows personal apps; Pay $12 a month buys Pro for the personal account, shown in words and a receipt",
      async () => {
        await page.goto(`${hatch.baseUrl}/dashboard`);
        expect(await page.getByRole("heading", { name: `Your apps in ${orgName}` }).count()).toBe(1);
        await switchTo("Personal");
        expect(await page.getByRole("heading", { name: "Your personal apps" }).count()).toBe(1);
        expect(await page.locator(`[data-address="mine-${tag}"]`).count()).toBe(1);

        await page.getByRole("link", { name: "Billing" }).click();
        await page.getByRole("heading", { name: "Billing of your personal account" }).waitFor();
        await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Pay $12 a month" }).click()]);
        await page.getByLabel("Card number").fill("4242 4242 4242 4242");
        await page.getByRole("radio", { name: /Pro/ }).check();
        await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Save" }).click()]);
        const words = await page.locator("#plan-words").textContent();
        expect(words).toContain("Your personal account is on the Pro plan, $12 a month.");
        expect(await page.locator('[data-usage="apps"]').textContent()).toContain("Apps: 1 of 50");
        expect(await page.locator("[data-receipt]").first().textContent()).toContain("$12.00");

        // The organization's billing is its own: still Free.
        await switchTo(`${orgName} (organization)`);
        expect(await page.locator("#plan").getAttribute("data-plan")).toBe("free");
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "axe-core finds nothing and nothing scrolls sideways: apps, billing, domains, a purchase's confirm step",
      async () => {
        const problems: string[] = [];
        const look = async (label: string, size: (typeof PAGE_SIZES)[number], open: () => Promise<unknown>) => {
          await open();
          problems.push(...(await pageProblems(page, label, size)));
        };
        const go = (path: string) => async () => {
          const response = await page.goto(`${hatch.baseUrl}${path}`);
          if (response?.status() !== 200) problems.push(`${path}: status ${response?.status()}`);
        };
        for (const size of PAGE_SIZES) {
          await page.setViewportSize({ width: size.width, height: size.height });
          await page.emulateMedia({ colorScheme: size.scheme });
          await look("apps (organization)", size, go("/dashboard"));
          await look("billing (organization)", size, go("/dashboard/billing"));
          await look("domains with search results", size, go(`/dashboard/domains?find=free-browser-${tag}`));
          await look("buy without a card", size, () =>
            Promise.all([
              page.waitForNavigation(),
              page
                .getByRole("button", { name: `Buy free-browser-${tag}.com for` })
                .first()
                .click(),
            ]),
          );
          await look("switcher to personal", size, () => switchTo("Personal"));
          await look("apps (personal)", size, go("/dashboard"));
          await look("billing (personal) with receipts", size, go("/dashboard/billing"));
          await look("buy's confirm step", size, async () => {
            await go(`/dashboard/domains?find=free-browser-${tag}`)();
            await Promise.all([
              page.waitForNavigation(),
              page
                .getByRole("button", { name: `Buy free-browser-${tag}.com for` })
                .first()
                .click(),
            ]);
            await page.getByRole("heading", { name: "Please confirm" }).waitFor();
          });
          await switchTo(`${orgName} (organization)`);
        }
        expect(problems).toEqual([]);
      },
      TEST_TIMEOUT_MS,
    );
  });
}
