import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppsService } from "@hatch/apps";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { type Browser, type BrowserContext, type Page } from "playwright-core";
import { launchChromium } from "./support/chromium.ts";
import { buildCounterApp, publishFolder } from "./support/app-folder.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectFormClient, userWithToken } from "./support/mcp.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

const PASSWORD = "correct horse battery";

// The product's main path, as a user sees it: an AI builds an app (Bun's bundler, hashed assets), publishes it
// through the MCP tools, and people open it in a real browser on the app host. Visibility for the owner, another
// user and an anonymous viewer; a new version, a rollback, stats that move, and a delete.
for (const mode of EMBEDDED_MODES) {
  describe(`publish and open in a browser (${mode})`, () => {
    let hatch: TestHatch;
    let browser: Browser;
    let ai: Client;
    let owner: Awaited<ReturnType<typeof userWithToken>>;
    let stranger: Awaited<ReturnType<typeof userWithToken>>;
    let url: string;
    let address: string;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      owner = await userWithToken(hatch, { name: "Owner" });
      stranger = await userWithToken(hatch, { name: "Stranger" });
      ({ client: ai } = await connectFormClient(hatch, owner.accessToken, () => ({
        action: "accept",
        content: { name: "Click Counter", visibility: "private", confirm: true },
      })));
      browser = await launchChromium();
    }, 90_000);
    afterAll(async () => {
      await ai?.close();
      await browser?.close();
      await hatch?.stop();
    });

    async function signedInPage(email: string): Promise<{ context: BrowserContext; page: Page }> {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(url);
      expect(new URL(page.url()).pathname).toBe("/signin");
      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Password").fill(PASSWORD);
      await Promise.all([page.waitForLoadState("load"), page.getByRole("button", { name: "Sign in" }).click()]);
      return { context, page };
    }

    async function flushStats(): Promise<void> {
      await (hatch.services.get("apps") as AppsService).host.flushStats();
    }

    test("the AI publishes a built app; the user is asked its name and who may see it", async () => {
      const folder = await buildCounterApp("Counter v1");
      expect([...folder.keys()].some((p) => /^chunk-[a-z0-9]{8}\.js$/.test(p))).toBe(true);
      const published = await publishFolder(ai, folder, {});
      expect(published).toMatchObject({ address: "click-counter", version: 1, uploads: folder.size });
      ({ url, address } = published);
    });

    test("an anonymous viewer is sent to sign in; another user is refused", async () => {
      const anonymous = await browser.newContext();
      const page = await anonymous.newPage();
      await page.goto(url);
      expect(new URL(page.url()).origin).toBe(hatch.baseUrl);
      expect(await page.content()).not.toContain("Counter v1");
      await anonymous.close();

      const { context, page: theirs } = await signedInPage(stranger.email);
      expect(new URL(theirs.url()).origin).toBe(new URL(url).origin);
      expect(await theirs.content()).toContain(stranger.email);
      expect(await theirs.content()).not.toContain("Counter v1");
      await context.close();
    });

    test("the owner opens the app and it runs: the bundled script and styles are served", async () => {
      const { context, page } = await signedInPage(owner.email);
      expect(page.url()).toBe(url);
      expect(await page.locator("h1").innerText()).toBe("Counter v1");
      await page.getByRole("button", { name: "+1" }).click();
      await page.getByRole("button", { name: "+1" }).click();
      expect(await page.locator("#count").innerText()).toBe("2");
      expect(await page.locator("#count").evaluate((el) => getComputedStyle(el).fontWeight)).toBe("700");
      await context.close();
    });

    test("a new version goes live; rollback brings the old one back", async () => {
      const v2 = await publishFolder(ai, await buildCounterApp("Counter v2"), { address });
      expect(v2.version).toBe(2);
      const { context, page } = await signedInPage(owner.email);
      expect(await page.locator("h1").innerText()).toBe("Counter v2");
      expect(await callOk(ai, "rollback", { address, version: 1 })).toMatchObject({
        status: "rolled_back",
        currentVersion: 1,
      });
      await page.reload();
      expect(await page.locator("h1").innerText()).toBe("Counter v1");
      await context.close();
    });

    test("stats count the opens and the unique viewers", async () => {
      await flushStats();
      const stats = await callOk(ai, "tool_stats", { address, days: 1 });
      // The owner opened the page three times (two visits and a reload); one viewer.
      expect(stats.totalOpens).toBeGreaterThanOrEqual(3);
      expect(stats.totalUniqueViewers).toBe(1);
      const listed = await callOk(ai, "list_tools", {});
      expect(listed.apps).toEqual([expect.objectContaining({ address, opens7d: stats.totalOpens, currentVersion: 1 })]);
    });

    test("after a confirmed delete the app is gone for everyone", async () => {
      expect(await callOk(ai, "delete_tool", { address })).toEqual({ status: "deleted", address });
      const context = await browser.newContext();
      const response = await (await context.newPage()).goto(url);
      expect(response?.status()).toBe(404);
      expect(await response?.text()).toContain(address);
      await context.close();
    });
  });
}
