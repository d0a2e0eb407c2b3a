import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { and, desc, eq } from "drizzle-orm";
import type { Browser, Page } from "playwright-core";
import { mails } from "../services/orgs/src/db/schema.ts";
import { CHROMIUM, hasChromium, launchChromium } from "./support/chromium.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { connectClient, userWithToken } from "./support/mcp.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";
import { startStandInApps, type StandInApps } from "./support/stand-in-apps.ts";

// Issue 16, points 2 and 4 as a person meets them in Chromium: signing up from the header in the middle of an AI
// client's authorization still ends in the client's callback; the right password gets in after many wrong ones;
// a forgotten password is reset by the mailed link (read from orgs' mail table); revoke asks, then says so;
// a confirm link from a disconnected client is withdrawn; the confirm button names the action.

const suiteName = (mode: string) =>
  hasChromium
    ? `sign-in and connections in a real browser (${mode})`
    : `sign-in and connections in a real browser (SKIPPED: ${CHROMIUM} is missing; apt-get install -y chromium)`;
const PASSWORD = "correct horse battery";
let people = 0;

/** The newest password reset link mailed to `email`, from the orgs mail table (the dev outbox). */
async function resetLink(hatch: TestHatch, email: string): Promise<string> {
  const [mail] = await hatch.databases
    .get("orgs")!
    .select()
    .from(mails)
    .where(and(eq(mails.to, email.toLowerCase()), eq(mails.subject, "Reset your Hatch password")))
    .orderBy(desc(mails.createdAt))
    .limit(1);
  const link = mail?.body?.match(/https?:\/\/\S+\/reset-password\?token=[A-Za-z0-9_.-]+/)?.[0];
  if (!link) throw new Error(`no password reset mail to ${email}`);
  return link;
}

for (const mode of EMBEDDED_MODES) {
  describe.skipIf(!hasChromium)(suiteName(mode), () => {
    let hatch: TestHatch;
    let apps: StandInApps;
    let browser: Browser;
    let callback: ReturnType<typeof Bun.serve>;

    beforeAll(async () => {
      hatch = await startTestHatch(mode, { services: ["orgs"] });
      apps = await startStandInApps(hatch);
      browser = await launchChromium();
      // The AI client's loopback redirect: it only has to answer.
      callback = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("You can close this tab.") });
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
      await callback?.stop(true);
      await apps?.stop();
      await hatch?.stop();
    });

    async function fresh(): Promise<Page> {
      return (await browser.newContext()).newPage();
    }

    async function press(page: Page, name: string): Promise<void> {
      await Promise.all([page.waitForNavigation(), page.getByRole("button", { name, exact: true }).click()]);
    }

    async function signUpOn(page: Page, email: string): Promise<void> {
      await page.getByLabel("Name").fill("Signin Person");
      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Password").fill(PASSWORD);
      await press(page, "Sign up");
    }

    test("sign-up from the header during an authorization keeps it, and the OAuth flow completes", async () => {
      const redirectUri = `http://127.0.0.1:${callback.port}/callback`;
      const registered = await fetch(`${hatch.baseUrl}/oauth/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ client_name: "Signin Browser Client", redirect_uris: [redirectUri] }),
      });
      const { client_id: clientId } = (await registered.json()) as { client_id: string };
      const verifier = randomBytes(32).toString("base64url");
      const authorize = new URL(`${hatch.baseUrl}/oauth/authorize`);
      for (const [k, v] of Object.entries({
        response_type: "code",
        client_id: clientId,
        redirect_uri: redirectUri,
        code_challenge: createHash("sha256").update(verifier).digest("base64url"),
        code_challenge_method: "S256",
        state: "s-1",
        resource: hatch.mcpUrl,
      }))
        authorize.searchParams.set(k, v);

      const page = await fresh();
      await page.goto(authorize.toString());
      expect(new URL(page.url()).pathname).toBe("/signin");
      expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe(
        "Sign in to connect Signin Browser Client to Hatch",
      );
      // The header's Sign up, not the body's.
      await Promise.all([
        page.waitForNavigation(),
        page.locator("header").getByRole("link", { name: "Sign up" }).click(),
      ]);
      expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe(
        "Sign up to connect Signin Browser Client to Hatch",
      );
      await signUpOn(page, `header${++people}-${mode}@example.com`);
      expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe("Connect Signin Browser Client?");
      await Promise.all([
        page.waitForURL((url) => url.port === String(callback.port)),
        page.getByRole("button", { name: "Allow full access" }).click(),
      ]);
      const landed = new URL(page.url());
      expect(landed.searchParams.get("state")).toBe("s-1");
      const token = await fetch(`${hatch.baseUrl}/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code: landed.searchParams.get("code") ?? "",
          code_verifier: verifier,
          client_id: clientId,
          redirect_uri: redirectUri,
          resource: hatch.mcpUrl,
        }),
      });
      expect(token.status).toBe(200);
      expect(((await token.json()) as { access_token: string }).access_token).toBeString();
      await page.context().close();
    }, 60_000);

    test("the right password gets in after many wrong ones from the same browser", async () => {
      const user = await userWithToken(hatch);
      const page = await fresh();
      await page.goto(`${hatch.baseUrl}/signin`);
      // Six wrong: past the old lock (five) and into the held attempts.
      for (let i = 0; i < 6; i++) {
        await page.getByLabel("Email").fill(user.email);
        await page.getByLabel("Password").fill(`wrong ${i}`);
        await press(page, "Sign in");
        expect(await page.getByRole("alert").innerText()).toContain("Email or password is wrong.");
      }
      expect(await page.locator("main").innerText()).toContain("The right password always signs in.");
      await page.getByLabel("Email").fill(user.email);
      await page.getByLabel("Password").fill(PASSWORD);
      await press(page, "Sign in");
      expect(await page.locator("header").innerText()).toContain(user.email);
      await page.context().close();
    }, 60_000);

    test("forgot password: the mailed link sets a new one, which then signs in", async () => {
      const user = await userWithToken(hatch);
      const page = await fresh();
      await page.goto(`${hatch.baseUrl}/signin`);
      await Promise.all([page.waitForNavigation(), page.getByRole("link", { name: "Forgot your password?" }).click()]);
      await page.getByLabel("Email").fill(user.email);
      await press(page, "Mail me a reset link");
      expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe("Check your inbox");

      await page.goto(await resetLink(hatch, user.email));
      await page.getByLabel("New password").fill("a fresh passphrase");
      await press(page, "Save the new password");
      expect(await page.getByRole("status").innerText()).toContain("1 AI client connection was disconnected");
      // The script's grant ended with the reset.
      expect(await hatch.gateway.auth.identityForGrant(user.grantId)).toBeNull();

      const other = await fresh();
      await other.goto(`${hatch.baseUrl}/signin`);
      await other.getByLabel("Email").fill(user.email);
      await other.getByLabel("Password").fill("a fresh passphrase");
      await press(other, "Sign in");
      expect(await other.locator("header").innerText()).toContain(user.email);
      await page.context().close();
      await other.context().close();
    }, 60_000);

    async function signedIn(email: string): Promise<Page> {
      const page = await fresh();
      await page.goto(`${hatch.baseUrl}/signin`);
      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Password").fill(PASSWORD);
      await press(page, "Sign in");
      return page;
    }

    test("Revoke asks, then says it is done", async () => {
      const user = await userWithToken(hatch);
      const page = await signedIn(user.email);
      await page.goto(`${hatch.baseUrl}/dashboard/tokens`);
      const row = page.getByRole("row", { name: /Hatch CLI/ });
      expect(await row.innerText()).toContain("Client ID: built into Hatch");
      await Promise.all([page.waitForNavigation(), row.getByRole("link", { name: "Revoke Hatch CLI" }).click()]);
      expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe("Revoke Hatch CLI?");
      expect(await hatch.gateway.auth.identityForGrant(user.grantId)).not.toBeNull();
      await press(page, "Revoke Hatch CLI");
      expect(await page.getByRole("status").innerText()).toContain("Hatch CLI is revoked");
      expect(await hatch.gateway.auth.identityForGrant(user.grantId)).toBeNull();
      await page.context().close();
    }, 60_000);

    /** The link an AI client without forms hands the user for delete_tool. */
    async function deleteLink(accessToken: string, address: string): Promise<string> {
      const client = await connectClient(hatch, accessToken);
      const result = await client.callTool({ name: "delete_tool", arguments: { address } });
      await client.close();
      return (result.structuredContent as { userAction: { url: string } }).userAction.url;
    }

    test("the confirm page names the approved client and the button names the action", async () => {
      const user = await userWithToken(hatch);
      const link = await deleteLink(user.accessToken, "my-todo");
      const page = await signedIn(user.email);
      await page.goto(link);
      expect(await page.locator("main").innerText()).toContain("Hatch CLI, the AI client you connected, asks you");
      expect(await page.getByRole("button", { name: "Delete my-todo" }).count()).toBe(1);
      await press(page, "Delete my-todo");
      expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe("Done");
      await page.context().close();
    }, 60_000);

    test("a confirm link from a revoked client shows withdrawn, with no button", async () => {
      const user = await userWithToken(hatch);
      const link = await deleteLink(user.accessToken, "old-notes");
      await hatch.gateway.auth.revokeGrant(user.grantId, "user");
      const page = await signedIn(user.email);
      await page.goto(link);
      expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe("Request withdrawn");
      expect(await page.getByRole("alert").innerText()).toContain("This request was withdrawn");
      expect(await page.locator("main").getByRole("button").count()).toBe(0);
      expect(apps.acted.filter((a) => (a.input as { address?: string }).address === "old-notes")).toEqual([]);
      await page.context().close();
    }, 60_000);
  });
}
