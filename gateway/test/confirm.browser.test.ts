import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Browser, type Page } from "playwright-core";
import { CHROMIUM, hasChromium, launchChromium } from "../../test/support/chromium.ts";
import { startTestHatch, type TestHatch } from "../../test/support/hatch.ts";
import { connectClient, userWithToken } from "../../test/support/mcp.ts";
import { startStandInApps, type StandInApps } from "../../test/support/stand-in-apps.ts";

// Locally a missing browser skips the suite with a note; in CI (which installs it) it must run.
const suiteName = hasChromium
  ? "the confirm page in a real browser"
  : `the confirm page in a real browser (SKIPPED: ${CHROMIUM} is missing; apt-get install -y chromium)`;

// The user's side of a delete asked by a client without form elicitation: the AI hands them the link, they
// sign in, read the question and press Confirm or Cancel. No JavaScript runs on these pages.
describe.skipIf(!hasChromium)(suiteName, () => {
  let hatch: TestHatch;
  let apps: StandInApps;
  let user: Awaited<ReturnType<typeof userWithToken>>;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    hatch = await startTestHatch("embedded", { services: ["orgs"] });
    apps = await startStandInApps(hatch);
    user = await userWithToken(hatch);
    browser = await launchChromium();
    page = await browser.newPage();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await apps?.stop();
    await hatch?.stop();
  });

  /** What the AI would hand the user: the link from delete_tool's result. */
  async function deleteLink(address: string): Promise<string> {
    const client = await connectClient(hatch, user.accessToken);
    const result = await client.callTool({ name: "delete_tool", arguments: { address } });
    await client.close();
    return (result.structuredContent as { userAction: { url: string } }).userAction.url;
  }

  async function press(button: string): Promise<void> {
    await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: button }).click()]);
  }

  test("open the link, sign in, read the question, confirm: the app is deleted and the result shown", async () => {
    const link = await deleteLink("holiday-photos");
    await page.goto(link);
    expect(new URL(page.url()).pathname).toBe("/signin");
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill("correct horse battery");
    await press("Sign in");
    expect(page.url()).toBe(link);

    const question = await page.locator("main").innerText();
    expect(question).toContain("Delete holiday-photos? This cannot be undone.");
    expect(question).toContain("Nothing happens unless you confirm.");
    expect(apps.acted).toEqual([]);

    await press("Delete holiday-photos");
    expect(await page.getByRole("heading").innerText()).toBe("Done");
    expect(await page.getByRole("status").innerText()).toBe("Deleted holiday-photos.");
    expect(apps.acted).toEqual([
      { tool: "delete_tool", user: user.id, input: { address: "holiday-photos" }, answer: { confirm: true } },
    ]);

    // Back to the link (as after pressing Back and reloading): it worked once.
    await page.goto(link);
    expect(await page.getByRole("heading").innerText()).toBe("Already confirmed");
  });

  test("Cancel changes nothing", async () => {
    apps.reset();
    const link = await deleteLink("thesis-draft");
    await page.goto(link);
    expect(await page.locator("main").innerText()).toContain("Delete thesis-draft?");
    await press("Cancel");
    expect(await page.getByRole("heading").innerText()).toBe("Cancelled");
    expect(await page.locator("main").innerText()).toContain("Nothing was changed.");
    expect(apps.calls).toHaveLength(1);
    expect(apps.acted).toEqual([]);
  });
});
