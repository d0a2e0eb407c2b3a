import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Browser } from "playwright-core";
import { hasChromium, launchChromium } from "./support/chromium.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

// The local provider's checkout in a real browser: the url `billing` gives → sign in → a declined card → the test
// card and Pro → the settings page and `billing` both show Pro with a card on file. The card number never reaches a log.

const PASSWORD = "correct horse battery";
const TEST_TIMEOUT_MS = 60_000;

for (const mode of EMBEDDED_MODES) {
  describe.skipIf(!hasChromium)(`billing local checkout in a browser (${mode})`, () => {
    let hatch: TestHatch;
    let browser: Browser;
    let ai: Client;
    let user: Awaited<ReturnType<typeof userWithToken>>;
    const lines: string[] = [];

    beforeAll(async () => {
      hatch = await startTestHatch(mode, { logWrite: (line) => lines.push(line) });
      user = await userWithToken(hatch, { name: "Cara" });
      ai = await connectClient(hatch, user.accessToken);
      browser = await launchChromium();
    }, 90_000);
    afterAll(async () => {
      await ai?.close();
      await browser?.close();
      await hatch?.stop();
    });

    test(
      "a free user opens billing's link, signs in, adds the test card with Pro; billing shows pro and the card",
      async () => {
        const before = await callOk<{ plan: string; cardOnFile: boolean; url: string }>(ai, "billing", {
          manage: true,
        });
        expect(before).toMatchObject({ plan: "free", cardOnFile: false });
        const context = await browser.newContext();
        const page = await context.newPage();
        await page.goto(before.url);
        await page.waitForURL((next) => next.pathname === "/signin");
        await page.getByLabel("Email").fill(user.email);
        await page.getByLabel("Password").fill(PASSWORD);
        await Promise.all([
          page.waitForURL((next) => next.pathname === "/dashboard/billing/checkout"),
          page.getByRole("button", { name: "Sign in" }).click(),
        ]);

        await page.getByLabel("Card number").fill("4000 0000 0000 0002");
        await page.getByRole("button", { name: "Save" }).click();
        expect(await page.getByRole("alert").textContent()).toContain("declined");
        expect((await callOk<{ cardOnFile: boolean }>(ai, "billing")).cardOnFile).toBe(false);

        await page.getByLabel("Card number").fill("4242 4242 4242 4242");
        await page.getByRole("radio", { name: /Pro/ }).check();
        await Promise.all([
          page.waitForURL((next) => next.pathname === "/dashboard/billing"),
          page.getByRole("button", { name: "Save" }).click(),
        ]);
        // The page says it in words ("… on the Pro plan, $12 a month.", "A card is on file."); the codes ride along.
        expect(await page.locator("#plan").getAttribute("data-plan")).toBe("pro");
        expect(await page.locator("#card").getAttribute("data-card")).toBe("yes");

        const after = await callOk<{ plan: string; state: string; cardOnFile: boolean }>(ai, "billing");
        expect(after).toMatchObject({ plan: "pro", state: "active", cardOnFile: true });
        const logs = lines.join("\n");
        expect(logs).not.toContain("4242");
        expect(logs).not.toContain("0002");
        await context.close();
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "the portal: cancel the paid plan, then remove the card; a post without the CSRF token is refused",
      async () => {
        const context = await browser.newContext();
        const page = await context.newPage();
        await page.goto(`${hatch.baseUrl}/dashboard/billing/portal`);
        await page.getByLabel("Email").fill(user.email);
        await page.getByLabel("Password").fill(PASSWORD);
        await Promise.all([
          page.waitForURL((next) => next.pathname === "/dashboard/billing/portal"),
          page.getByRole("button", { name: "Sign in" }).click(),
        ]);
        await page.getByRole("button", { name: "Cancel the paid plan" }).click();
        expect(await page.getByRole("status").textContent()).toContain("free");
        await page.getByRole("button", { name: "Remove the card" }).click();
        expect(await page.getByRole("status").textContent()).toContain("Card removed");
        expect(await callOk<{ plan: string; cardOnFile: boolean }>(ai, "billing")).toMatchObject({
          plan: "free",
          cardOnFile: false,
        });

        const forged = await page.request.post(`${hatch.baseUrl}/dashboard/billing/checkout`, {
          form: { card: "4242424242424242", plan: "pro" },
          maxRedirects: 0,
        });
        expect(forged.status()).toBe(403);
        expect((await callOk<{ plan: string }>(ai, "billing")).plan).toBe("free");
        await context.close();
      },
      TEST_TIMEOUT_MS,
    );
  });
}
