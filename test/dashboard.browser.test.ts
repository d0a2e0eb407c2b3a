import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Browser, Page } from "playwright-core";
import { CHROMIUM, hasChromium, launchChromium } from "./support/chromium.ts";
import { eventually } from "./support/eventually.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

// The dashboard in headless Chromium at a desktop and a phone size: the list of one's own and shared apps, rolling
// back, sharing with a person, making public through the tool's confirmation, deleting by typing the address, the
// organization page as its owner and as a member, the activity log naming the dashboard, and the 404 page.

const TEST_TIMEOUT_MS = 90_000;
const PASSWORD = "correct horse battery";
const SIZES = [
  { name: "desktop", width: 1280, height: 800 },
  { name: "phone", width: 390, height: 844 },
] as const;
const files = (text: string) => [
  { path: "index.html", content: `<!doctype html><title>${text}</title><h1>${text}</h1>` },
];
type User = Awaited<ReturnType<typeof userWithToken>>;

for (const mode of EMBEDDED_MODES) {
  const name = `dashboard in a real browser (${mode})`;
  describe.skipIf(!hasChromium)(hasChromium ? name : `${name} (SKIPPED: ${CHROMIUM} is missing)`, () => {
    let hatch: TestHatch;
    let browser: Browser;
    let owner: User;
    let member: User;
    let friend: User;
    let ownerAi: Client;
    let memberAi: Client;
    let friendAi: Client;
    let sharedAddress = "";

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      const id = `${mode}-${process.pid}`;
      owner = await userWithToken(hatch, { name: "Olivia Owner", email: `dash-olivia-${id}@example.com` });
      member = await userWithToken(hatch, { name: "Max Member", email: `dash-max-${id}@example.com` });
      friend = await userWithToken(hatch, { name: "Fred Friend", email: `dash-fred-${id}@example.com` });
      ownerAi = await connectClient(hatch, owner.accessToken);
      memberAi = await connectClient(hatch, member.accessToken);
      friendAi = await connectClient(hatch, friend.accessToken);
      await callOk(ownerAi, "org_setup", { action: "create", name: "Dash Co" });
      await callOk(ownerAi, "org_invite", { emails: [member.email], role: "member" });
      await callOk(memberAi, "org_setup", { action: "accept" });
      const shared = await callOk<{ address: string }>(friendAi, "publish", {
        name: "Fred's Notes",
        visibility: "private",
        files: files("notes"),
      });
      sharedAddress = shared.address;
      await callOk(friendAi, "share", { address: sharedAddress, visibility: "people", add: [owner.email] });
      browser = await launchChromium();
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      for (const ai of [ownerAi, memberAi, friendAi]) await ai?.close();
      await hatch?.stop();
    }, TEST_TIMEOUT_MS);

    async function signIn(user: User, size: (typeof SIZES)[number]): Promise<Page> {
      const context = await browser.newContext({ viewport: { width: size.width, height: size.height } });
      const page = await context.newPage();
      await page.goto(`${hatch.baseUrl}/signin`);
      await page.getByLabel("Email").fill(user.email);
      await page.getByLabel("Password").fill(PASSWORD);
      await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Sign in" }).click()]);
      expect(new URL(page.url()).pathname).toBe("/dashboard");
      return page;
    }

    /** Presses a button and waits for the page the server answers with. */
    async function press(page: Page, button: string): Promise<void> {
      await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: button, exact: true }).click()]);
    }

    /** The page never scrolls sideways (the whole page, header included: layout.ts restyles it for 390 px). */
    async function noSideways(page: Page): Promise<void> {
      const [scrollWidth, width] = await page.evaluate(() => [
        document.scrollingElement!.scrollWidth,
        window.innerWidth,
      ]);
      expect(scrollWidth).toBeLessThanOrEqual(width!);
    }

    for (const size of SIZES) {
      test(
        `${size.name}: list, roll back, share with a person, make public, delete by typing the address`,
        async () => {
          const first = await callOk<{ address: string }>(ownerAi, "publish", {
            name: `Planner ${size.name}`,
            visibility: "private",
            files: files("one"),
          });
          const address = first.address;
          await callOk(ownerAi, "publish", { address, files: files("two") });

          const page = await signIn(owner, size);
          const mine = page.locator(`article[data-address="${address}"]`);
          expect(await mine.innerText()).toContain(`Planner ${size.name}`);
          expect(await mine.innerText()).toContain("version 2");
          const shared = page.locator(`article[data-address="${sharedAddress}"]`);
          expect(await shared.innerText()).toContain("Shared with you by Fred Friend");
          expect(await page.locator("section", { hasText: "Shared with you" }).innerText()).toContain("Fred's Notes");
          await noSideways(page);

          await Promise.all([page.waitForNavigation(), mine.getByRole("link", { name: "Manage" }).click()]);
          expect(new URL(page.url()).pathname).toBe(`/dashboard/apps/${address}`);
          expect(await page.locator("h1").innerText()).toBe(`Planner ${size.name}`);
          expect(await page.locator("svg[role=img]").getAttribute("aria-label")).toContain("Opens and unique viewers");
          await noSideways(page);

          await press(page, "Roll back to version 1");
          expect(new URL(page.url()).pathname).toBe(`/dashboard/apps/${address}`);
          expect(await page.getByRole("status").innerText()).toContain(`${address} now serves version 1`);
          expect(await page.locator('li[data-version="1"]').innerText()).toContain("(current)");
          // The form answered with a redirect: reloading shows the page again, without the notice or a second post.
          await page.reload();
          expect(await page.getByRole("status").count()).toBe(0);
          expect(await page.locator('li[data-version="1"]').innerText()).toContain("(current)");
          expect(
            (await callOk<{ apps: { address: string; currentVersion: number }[] }>(ownerAi, "list_tools")).apps.find(
              (a) => a.address === address,
            )?.currentVersion,
          ).toBe(1);

          const guest = `guest-${size.name}-${mode}@example.com`;
          await page.getByLabel("Add a person by email").fill(guest);
          await press(page, "Share with this person");
          expect(await page.getByRole("status").innerText()).toContain(guest);
          expect(await page.locator("section", { hasText: "People" }).innerText()).toContain(`Remove ${guest}`);

          await page.getByLabel("Public: anyone with the link").check();
          await press(page, "Save sharing");
          expect(await page.locator("h1").innerText()).toBe("Please confirm");
          expect(await page.locator("main").innerText()).toContain(`Make "Planner ${size.name}"`);
          await noSideways(page);
          await press(page, "Make it public");
          expect(new URL(page.url()).pathname).toBe(`/dashboard/apps/${address}`);
          expect(await page.getByRole("status").innerText()).toContain("is public");
          expect(await page.getByLabel("Public: anyone with the link").isChecked()).toBe(true);

          await page.getByLabel(`Type ${address} to confirm`).fill(address);
          await press(page, `Delete ${address}`);
          expect(await page.locator("h1").innerText()).toBe("Your apps");
          expect(await page.getByRole("status").innerText()).toContain(address);
          expect(await page.locator(`article[data-address="${address}"]`).count()).toBe(0);
          await page.context().close();
        },
        TEST_TIMEOUT_MS,
      );

      test(
        `${size.name}: the owner manages the organization and sees the dashboard in its activity; a member sees no manager actions`,
        async () => {
          const page = await signIn(owner, size);
          await page.goto(`${hatch.baseUrl}/dashboard/org`);
          expect(await page.locator("h1").innerText()).toBe("Dash Co");
          expect(await page.locator(`li[data-member="${member.email}"]`).innerText()).toContain("member");
          const invitee = `invitee-${size.name}-${mode}-${process.pid}@example.com`;
          await page.getByLabel("Emails (separated by commas or spaces)").fill(invitee);
          await press(page, "Send invitations");
          if ((await page.locator("h1").innerText()) === "Please confirm") await press(page, "Send invitations");
          expect(await page.locator(`li[data-invitation="${invitee}"]`).count()).toBe(1);
          await noSideways(page);
          const line = await eventually(async () => {
            await page.reload();
            const entries = await page.locator("ol.activity li").allInnerTexts();
            return entries.find((e) => e.includes(invitee) && e.includes("(on the dashboard)"));
          }, "the invitation in the activity log");
          expect(line).toContain("(on the dashboard)");
          // The AI reading the log hears the same: the entry came through the dashboard, not an AI client.
          const log = await ownerAi.callTool({ name: "org_activity", arguments: {} });
          const text = (log.content as { text: string }[])[0]!.text;
          expect(text.split("\n").find((l) => l.includes(invitee))).toContain("(on the dashboard)");
          await page.context().close();

          const seen = await signIn(member, size);
          await seen.goto(`${hatch.baseUrl}/dashboard/org`);
          expect(await seen.locator("h1").innerText()).toBe("Dash Co");
          expect(await seen.locator(`li[data-member="${owner.email}"]`).innerText()).toContain("owner");
          expect(await seen.getByRole("button", { name: "Send invitations" }).count()).toBe(0);
          expect(
            await seen.getByRole("button", { name: /^Change role of|^Remove |^Revoke |^Pause$|^Unpause/ }).count(),
          ).toBe(0);
          expect(await seen.locator("#activity").count()).toBe(0);
          await noSideways(seen);
          await seen.context().close();
        },
        TEST_TIMEOUT_MS,
      );

      test(
        `${size.name}: an unknown path shows the 404 page with a way back`,
        async () => {
          const page = await signIn(member, size);
          const response = await page.goto(`${hatch.baseUrl}/dashboard/no-such-page`);
          expect(response?.status()).toBe(404);
          expect(await page.locator("h1").innerText()).toBe("Page not found");
          await Promise.all([page.waitForNavigation(), page.getByRole("link", { name: "your dashboard" }).click()]);
          expect(new URL(page.url()).pathname).toBe("/dashboard");
          await noSideways(page);
          await page.context().close();
        },
        TEST_TIMEOUT_MS,
      );
    }
  });
}
