import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Browser, Page } from "playwright-core";
import { axeFindings, PAGE_SIZES } from "./support/axe.ts";
import { CHROMIUM, hasChromium, launchChromium } from "./support/chromium.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { joinOrg } from "./support/orgs.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

// The pages issue 27 added or changed, in headless Chromium at 1280 px and 390 px, light and dark: axe-core finds
// nothing, nothing scrolls sideways, every page has the sub-menu (its page marked) and a skip link that the first Tab
// shows and that leads to the content; the statistics chart's text stays readable at 390 px; the app host's page for
// an unverified viewer has its own colours in dark mode (axe's contrast check passes there too).

const TEST_TIMEOUT_MS = 120_000;
const PASSWORD = "correct horse battery";
const SIZES = PAGE_SIZES;

async function signIn(browser: Browser, baseUrl: string, email: string): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  await page.goto(`${baseUrl}/signin`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(PASSWORD);
  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Sign in" }).click()]);
  return page;
}

for (const mode of EMBEDDED_MODES) {
  const name = `settings, version, organization and app pages in a real browser (${mode})`;
  describe.skipIf(!hasChromium)(hasChromium ? name : `${name} (SKIPPED: ${CHROMIUM} is missing)`, () => {
    let hatch: TestHatch;
    let browser: Browser;
    const clients: Client[] = [];
    let owner: Page;
    let address = "";
    let ownerEmail = "";
    let unverifiedEmail = "";

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      const ownerUser = await userWithToken(hatch, { name: "Olive Owner", email: `browser-owner-${mode}@example.com` });
      const managerUser = await userWithToken(hatch, {
        name: "Mo Manager",
        email: `browser-manager-${mode}@example.com`,
      });
      const unverified = await userWithToken(hatch, {
        name: "Una",
        email: `browser-unverified-${mode}@example.com`,
        verified: false,
      });
      ownerEmail = ownerUser.email;
      unverifiedEmail = unverified.email;
      const ownerAi = await connectClient(hatch, ownerUser.accessToken);
      const managerAi = await connectClient(hatch, managerUser.accessToken);
      clients.push(ownerAi, managerAi);
      await callOk(ownerAi, "org_setup", { action: "create", name: "Browser Co" });
      await joinOrg(ownerAi, managerAi, managerUser.email, { role: "manager" });
      const first = await callOk<{ address?: string }>(ownerAi, "publish", {
        name: `browser-${mode}`,
        visibility: "private",
        files: [
          { path: "index.html", content: "<h1>One</h1>" },
          { path: "assets/app.js", content: "1" },
        ],
      });
      address = first.address!;
      await callOk(ownerAi, "publish", { address, files: [{ path: "index.html", content: "<h1>Two</h1>" }] });
      await callOk(ownerAi, "share", { address, visibility: "people", add: [unverifiedEmail] });
      browser = await launchChromium();
      owner = await signIn(browser, hatch.baseUrl, ownerEmail);
    }, 120_000);
    afterAll(async () => {
      for (const client of clients) await client.close();
      await browser?.close();
      await hatch?.stop();
    }, TEST_TIMEOUT_MS);

    test(
      "axe-core finds nothing, nothing scrolls sideways, the sub-menu marks the page, the skip link works",
      async () => {
        const pages: [string, string | null][] = [
          ["/dashboard", "Apps"],
          ["/dashboard/settings", "Settings"],
          // The owner of an organization with a member: the page says to transfer ownership first.
          ["/dashboard/settings/delete", "Settings"],
          ["/dashboard/org", "Organization"],
          [`/dashboard/apps/${address}`, "Apps"],
          [`/dashboard/apps/${address}/versions/1`, "Apps"],
          ["/dashboard/tokens", "Connected clients"],
          ["/dashboard/ai-keys?scope=mine", "AI keys"],
        ];
        const problems: string[] = [];
        for (const size of SIZES) {
          await owner.setViewportSize({ width: size.width, height: size.height });
          await owner.emulateMedia({ colorScheme: size.scheme });
          for (const [path, current] of pages) {
            const where = `${path} ${size.width}px ${size.scheme}`;
            const response = await owner.goto(`${hatch.baseUrl}${path}`);
            if (response?.status() !== 200) problems.push(`${where}: status ${response?.status()}`);
            const overflow = await owner.evaluate(
              () => (document.scrollingElement?.scrollWidth ?? 0) - window.innerWidth,
            );
            if (overflow > 0) problems.push(`${where}: ${overflow}px sideways scroll`);
            const marked = await owner.locator('nav[aria-label="Dashboard"] a[aria-current="page"]').allInnerTexts();
            if (JSON.stringify(marked) !== JSON.stringify([current]))
              problems.push(`${where}: sub-menu marks ${marked}`);
            for (const finding of await axeFindings(owner)) problems.push(`${where}: ${finding}`);
          }
        }
        expect(problems).toEqual([]);

        // The first Tab shows the skip link; following it puts the focus on the page's content.
        await owner.goto(`${hatch.baseUrl}/dashboard/settings`);
        await owner.keyboard.press("Tab");
        const skip = owner.getByRole("link", { name: "Skip to content" });
        expect(await skip.evaluate((el) => el === document.activeElement)).toBe(true);
        expect((await skip.boundingBox())!.y).toBeGreaterThanOrEqual(0);
        await owner.keyboard.press("Enter");
        expect(await owner.evaluate(() => document.activeElement?.id)).toBe("main");
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "the statistics chart's text is at least 12 px on a 390 px screen",
      async () => {
        await owner.setViewportSize({ width: 390, height: 844 });
        await owner.goto(`${hatch.baseUrl}/dashboard/apps/${address}`);
        const sizes = await owner.evaluate(() =>
          [...document.querySelectorAll("svg.chart text")].map((text) => {
            const svg = text.closest("svg")!;
            const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
            return Number.parseFloat(getComputedStyle(text).fontSize) * scale;
          }),
        );
        expect(sizes.length).toBeGreaterThan(0);
        expect(Math.min(...sizes)).toBeGreaterThanOrEqual(12);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "an unverified person: the dashboard's banner, and the shared app's page says to verify, readable in dark mode",
      async () => {
        const page = await signIn(browser, hatch.baseUrl, unverifiedEmail);
        await page.emulateMedia({ colorScheme: "dark" });
        await page.goto(`${hatch.baseUrl}/dashboard`);
        await page.getByText("Verify your email.").waitFor();
        expect(await axeFindings(page)).toEqual([]);
        const appUrl = `${hatch.appHostUrl.replace("://", `://${address}.`)}/`;
        await page.goto(appUrl);
        await page.getByRole("heading", { name: "Verify your email to open this app" }).waitFor();
        const colours = await page.evaluate(() => {
          const style = getComputedStyle(document.body);
          return { color: style.color, background: style.backgroundColor };
        });
        expect(colours.background).toBe("rgb(17, 17, 17)");
        expect(colours.color).toBe("rgb(245, 245, 247)");
        expect(await axeFindings(page)).toEqual([]);
        await page.context().close();
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "deleting an account: the confirm step passes axe-core at 1280 and 390 px, and the form deletes it",
      async () => {
        const leaving = await userWithToken(hatch, {
          name: "Lee Leaving",
          email: `browser-leaving-${mode}@example.com`,
        });
        const page = await signIn(browser, hatch.baseUrl, leaving.email);
        const problems: string[] = [];
        for (const size of SIZES) {
          await page.setViewportSize({ width: size.width, height: size.height });
          await page.emulateMedia({ colorScheme: size.scheme });
          await page.goto(`${hatch.baseUrl}/dashboard/settings/delete`);
          const where = `${size.width}px ${size.scheme}`;
          const overflow = await page.evaluate(() => (document.scrollingElement?.scrollWidth ?? 0) - window.innerWidth);
          if (overflow > 0) problems.push(`${where}: ${overflow}px sideways scroll`);
          for (const finding of await axeFindings(page)) problems.push(`${where}: ${finding}`);
        }
        expect(problems).toEqual([]);
        await page.getByLabel("Current password").fill(PASSWORD);
        await page.getByLabel(/Type your email/).fill(leaving.email);
        await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Delete my account" }).click()]);
        await page.getByRole("heading", { name: "Your account is deleted" }).waitFor();
        expect(await axeFindings(page)).toEqual([]);
        await page.goto(`${hatch.baseUrl}/dashboard/settings`);
        expect(new URL(page.url()).pathname).toBe("/signin");
        await page.context().close();
      },
      TEST_TIMEOUT_MS,
    );
  });
}
