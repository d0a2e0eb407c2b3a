import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppsService } from "@hatch/apps";
import type { Browser, Page } from "playwright-core";
import { appLogs, blobs, bucketFiles, documents } from "../services/apps/src/db/schema.ts";
import { seedApp } from "../services/apps/test/support/seed.ts";
import { axeFindings } from "./support/axe.ts";
import { CHROMIUM, hasChromium, launchChromium } from "./support/chromium.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

// An app's logs and data pages in headless Chromium: the live tail shows a line logged after the page opened (under
// the page's own CSP), and axe-core finds nothing on the logs page and the data and file pages, at 1280 px light and 390 px dark.

const TEST_TIMEOUT_MS = 90_000;
const PASSWORD = "correct horse battery";
const SIZES = [
  { width: 1280, height: 800, scheme: "light" },
  { width: 390, height: 844, scheme: "dark" },
] as const;
for (const mode of MODES) {
  const name = `logs and data pages in a real browser (${mode})`;
  describe.skipIf(!hasChromium)(hasChromium ? name : `${name} (SKIPPED: ${CHROMIUM} is missing)`, () => {
    let hatch: TestHatch;
    let apps: AppsService;
    let browser: Browser;
    let page: Page;
    let appId = "";
    const address = `insight-browser-${mode}`;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      apps = hatch.services.get("apps") as AppsService;
      const owner = await userWithToken(hatch, { name: "Olivia Owner" });
      const app = await seedApp(apps.context, {
        address,
        owner: { id: owner.id, email: owner.email },
        files: { "index.html": "<h1>Notes</h1>" },
        config: { collections: { notes: { read: "owner" } }, buckets: { photos: {} } },
      });
      appId = app.id;
      await apps.context.db.insert(documents).values(
        [1, 2, 3].map((i) => ({
          appId,
          collection: "notes",
          id: `note${i}`,
          data: { text: `Note ${i}`, tags: ["a", "b"] },
          bytes: 40,
          createdBy: owner.id,
          createdByEmail: owner.email,
        })),
      );
      const png = Buffer.from(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
        "base64",
      );
      const sha256 = new Bun.CryptoHasher("sha256").update(png).digest("hex");
      await apps.context.blobs.put(sha256, png);
      await apps.context.db.insert(blobs).values({ sha256, size: png.length }).onConflictDoNothing();
      await apps.context.db.insert(bucketFiles).values({
        id: `dot-${mode}`,
        appId,
        bucket: "photos",
        name: "dot.png",
        contentType: "image/png",
        size: png.length,
        sha256,
      });
      await apps.context.db.insert(appLogs).values([
        { appId, level: "info", message: "server started" },
        { appId, level: "error", message: "GET /api/x: uncaught Error: boom\n    at handler (api/index.js:3:11)" },
      ]);
      browser = await launchChromium();
      page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
      await page.goto(`${hatch.baseUrl}/signin`);
      await page.getByLabel("Email").fill(owner.email);
      await page.getByLabel("Password").fill(PASSWORD);
      await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Sign in" }).click()]);
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await hatch?.stop();
    }, TEST_TIMEOUT_MS);

    test(
      "the live tail shows a line logged after the page opened",
      async () => {
        const errors: string[] = [];
        page.on("console", (message) => {
          if (message.type() === "error") errors.push(message.text());
        });
        await page.goto(`${hatch.baseUrl}/dashboard/apps/${address}/logs`);
        await page.getByText("server started").waitFor();
        await page.getByLabel("Follow new lines (live)").check();
        await page.getByText("Following new lines as they are logged.").waitFor();
        await apps.context.db.insert(appLogs).values({ appId, level: "warn", message: "a line from just now" });
        const line = page.locator("#log-lines li", { hasText: "a line from just now" });
        await line.waitFor();
        expect(await line.locator("strong").textContent()).toBe("warn");
        // The page's CSP allowed the tail's script and its stream: nothing was refused.
        expect(errors.filter((e) => e.includes("Content Security Policy"))).toEqual([]);
        await page.getByLabel("Follow new lines (live)").uncheck();
        await page.getByText("Stopped following new lines.").waitFor();
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "axe-core finds nothing on the logs page and the data and file pages, 1280 px light and 390 px dark",
      async () => {
        const paths = [
          "/logs",
          "/logs?uncaught=1",
          "/data",
          "/data/notes",
          "/data/notes/documents/note1",
          "/files/photos",
          `/files/photos/dot-${mode}`,
        ];
        const problems: string[] = [];
        for (const size of SIZES) {
          await page.setViewportSize({ width: size.width, height: size.height });
          await page.emulateMedia({ colorScheme: size.scheme });
          for (const path of paths) {
            const response = await page.goto(`${hatch.baseUrl}/dashboard/apps/${address}${path}`);
            if (response?.status() !== 200) problems.push(`${path}: status ${response?.status()}`);
            const overflow = await page.evaluate(
              () => (document.scrollingElement?.scrollWidth ?? 0) - window.innerWidth,
            );
            if (overflow > 0) problems.push(`${path} ${size.width}px: ${overflow}px sideways scroll`);
            for (const finding of await axeFindings(page))
              problems.push(`${path} ${size.width}px ${size.scheme}: ${finding}`);
          }
        }
        expect(problems).toEqual([]);
      },
      TEST_TIMEOUT_MS,
    );
  });
}
