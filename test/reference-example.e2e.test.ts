import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { EXAMPLE_APP } from "../services/apps/src/reference/example-app.ts";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { hasChromium, launchChromium } from "./support/chromium.ts";
import { eventually } from "./support/eventually.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectFormClient, userWithToken } from "./support/mcp.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

// The developer reference's example app (a todo list with a photo per item), exactly as the reference prints it,
// published through the tools and used in headless Chromium: what an AI copies must work as written.

const PASSWORD = "correct horse battery";
// Bun 1.4.5 keeps its 5 s default whatever bunfig says; these tests sign in through several pages.
const TEST_TIMEOUT_MS = 60_000;
/** A 1×1 PNG: a real image the browser decodes. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);

for (const mode of EMBEDDED_MODES) {
  describe.skipIf(!hasChromium)(`the reference's example app (${mode})`, () => {
    let hatch: TestHatch;
    let browser: Browser;
    let ai: Client;
    let user: Awaited<ReturnType<typeof userWithToken>>;
    let url = "";
    let address = "";
    const contexts: BrowserContext[] = [];
    const pageErrors: string[] = [];

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      user = await userWithToken(hatch, { name: "Rita" });
      ({ client: ai } = await connectFormClient(hatch, user.accessToken, () => ({
        action: "accept",
        content: { name: "Example Todos", visibility: "public", confirm: true },
      })));
      const files = Object.entries(EXAMPLE_APP).map(([path, content]) => ({ path, content, encoding: "utf8" }));
      ({ url, address } = await callOk<{ url: string; address: string }>(ai, "publish", { files }));
      browser = await launchChromium();
    }, 90_000);
    afterAll(async () => {
      for (const context of contexts) await context.close().catch(() => undefined);
      await ai?.close();
      await browser?.close();
      await hatch?.stop();
    });

    async function open(context?: BrowserContext): Promise<Page> {
      if (!context) {
        context = await browser.newContext();
        contexts.push(context);
      }
      const page = await context.newPage();
      page.on("pageerror", (error) => pageErrors.push(error.message));
      await page.goto(url);
      return page;
    }

    const texts = (page: Page) => page.locator("#list li span").allInnerTexts();
    const showsItems = (page: Page, expected: string[]) =>
      eventually(
        async () => JSON.stringify(await texts(page)) === JSON.stringify(expected),
        `items ${JSON.stringify(expected)}`,
      );

    test(
      "anonymous: the sign-in button; signed in: add with a photo, tick, a second tab sees changes live, delete",
      async () => {
        const page = await open();
        await page.getByRole("button", { name: "Sign in to keep a list" }).click();
        await page.waitForURL((next) => next.pathname === "/signin");
        await page.getByLabel("Email").fill(user.email);
        await page.getByLabel("Password").fill(PASSWORD);
        await Promise.all([
          page.waitForURL((next) => next.origin === new URL(url).origin),
          page.getByRole("button", { name: "Sign in" }).click(),
        ]);
        await page.getByText(`Signed in as ${user.email}`).waitFor();

        await page.locator("#text").fill("Water the plants");
        await page.locator("#photo").setInputFiles({ name: "plant.png", mimeType: "image/png", buffer: PNG });
        await page.getByRole("button", { name: "Add" }).click();
        await showsItems(page, ["Water the plants"]);
        await page.waitForFunction(
          () => (document.querySelector("#list img") as HTMLImageElement | null)?.naturalWidth === 1,
        );

        const other = await open(page.context());
        const streaming = other.waitForResponse(
          (response) => new URL(response.url()).pathname === "/_hatch/db/todos/_changes" && response.status() === 200,
        );
        await other.reload();
        await showsItems(other, ["Water the plants"]);
        await streaming;

        await page.locator("#text").fill("Call the bank");
        await page.getByRole("button", { name: "Add" }).click();
        await showsItems(other, ["Water the plants", "Call the bank"]);
        await page.locator("#list li", { hasText: "Water the plants" }).getByRole("checkbox").check();
        await eventually(
          async () => (await other.locator("#list li.done span").allInnerTexts()).join() === "Water the plants",
          "the tick in the other tab",
        );
        await page.locator("#list li", { hasText: "Call the bank" }).getByRole("button", { name: "Delete" }).click();
        await showsItems(other, ["Water the plants"]);
        await showsItems(page, ["Water the plants"]);
        expect(await page.locator("#error").innerText()).toBe("");
        expect(pageErrors).toEqual([]);

        const data = await callOk<{
          collections: { name: string; count: number }[];
          buckets: { name: string; count: number }[];
        }>(ai, "tool_data", { address });
        expect(data.collections.map((c) => [c.name, c.count])).toEqual([["todos", 1]]);
        expect(data.buckets).toEqual([{ name: "photos", count: 1 }]);
      },
      TEST_TIMEOUT_MS,
    );
  });
}
