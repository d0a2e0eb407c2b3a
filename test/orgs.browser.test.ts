import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Browser } from "playwright-core";
import { CHROMIUM, hasChromium, launchChromium } from "./support/chromium.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { invitationLink } from "./support/orgs.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

// Locally a missing browser skips the suite with a note; in CI (which installs it) it must run.

// bunfig's test timeout is not applied (Bun 1.4.5 keeps 5 s); these tests wait on events and browsers.
const TEST_TIMEOUT_MS = 30_000;

for (const mode of EMBEDDED_MODES) {
  const name = `an invitation accepted in a real browser by someone without an account (${mode})`;
  describe.skipIf(!hasChromium)(hasChromium ? name : `${name} (SKIPPED: ${CHROMIUM} is missing)`, () => {
    let hatch: TestHatch;
    let browser: Browser;

    beforeAll(async () => {
      hatch = await startTestHatch(mode, { gatewayConfig: { devPages: true } });
      browser = await launchChromium();
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
      await hatch?.stop();
    }, TEST_TIMEOUT_MS);

    test(
      "the mail's link leads through sign-up to joining; the new user's AI then acts in the organization",
      async () => {
        const owner = await userWithToken(hatch, { name: "Olivia Owner" });
        const client = await connectClient(hatch, owner.accessToken);
        await callOk(client, "org_setup", { action: "create", name: "Browser Co" });
        const newcomer = `newcomer-${mode}-${process.pid}@example.com`;
        await callOk(client, "org_invite", { emails: [newcomer], role: "manager", message: "See you inside" });

        const page = await browser.newPage();
        // Nobody is signed in yet, so the dev outbox shows nothing: the link comes from the mail itself.
        await page.goto(`${hatch.baseUrl}/dev/outbox`);
        expect(new URL(page.url()).pathname).toBe("/signin");
        await page.goto(await invitationLink(hatch, newcomer));
        const invitePath = new URL(page.url()).pathname;
        expect(invitePath).toMatch(/^\/invite\/[A-Za-z0-9_-]+$/);
        expect(await page.locator("main").innerText()).toContain(`Olivia Owner (${owner.email}) invited ${newcomer}`);

        await Promise.all([page.waitForNavigation(), page.getByRole("link", { name: "Create an account" }).click()]);
        expect(new URL(page.url()).pathname).toBe("/signup");
        await page.getByLabel("Name").fill("Nina Newcomer");
        await page.getByLabel("Email").fill(newcomer);
        await page.getByLabel("Password").fill("correct horse battery");
        await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Sign up" }).click()]);
        expect(new URL(page.url()).pathname).toBe(invitePath);

        await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Join Browser Co" }).click()]);
        expect(await page.locator("h1").innerText()).toBe("You joined Browser Co");

        // Signed in now, the dev outbox shows the newcomer's own mail: the invitation they used and the sign-up's
        // verification mail. Using the invitation link sent to their own address already verified it.
        await page.goto(`${hatch.baseUrl}/dev/outbox`);
        const mail = page.locator("article", { hasText: "Olivia Owner invited you to Browser Co" });
        expect(await mail.innerText()).toContain(`To ${newcomer}`);
        expect(await page.locator("article", { hasText: "Verify your email for Hatch" }).count()).toBe(1);
        await page.goto(`${hatch.baseUrl}/`);
        expect(await page.locator("main").innerText()).not.toContain("not verified");

        const token = await hatch.gateway.auth.issueTokenForScript({ email: newcomer });
        const nina = await connectClient(hatch, token.accessToken);
        expect(await callOk(nina, "whoami")).toEqual({ email: newcomer, name: "Nina Newcomer", kind: "company" });
        expect(await callOk(nina, "org")).toMatchObject({
          org: { name: "Browser Co", memberCount: 2 },
          role: "manager",
        });

        await page.goto(`${hatch.baseUrl}${invitePath}`);
        expect(await page.locator("main").innerText()).toContain("already accepted");
        await page.close();
        await nina.close();
        await client.close();
      },
      TEST_TIMEOUT_MS,
    );
  });
}
