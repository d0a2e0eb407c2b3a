import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { AppsService } from "@hatch/apps";
import { type Browser, type BrowserContext, type Page } from "playwright-core";
import { seedApp } from "../services/apps/test/support/seed.ts";
import { CHROMIUM, hasChromium, launchChromium } from "./support/chromium.ts";
import { eventually } from "./support/eventually.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { invitationLink } from "./support/orgs.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

// Every page a person sees, in headless Chromium at a desktop and a phone size, light and dark: no sideways scroll,
// no serious or critical axe-core finding (contrast included), copy buttons that copy under the page's own CSP.

const TEST_TIMEOUT_MS = 120_000;
const PASSWORD = "correct horse battery";
const SIZES = [
  { name: "1280×800", width: 1280, height: 800 },
  { name: "390×844", width: 390, height: 844 },
] as const;
// axe-core's own source, run in the page through the DevTools protocol: an injected <script> tag would be refused
// by the page's CSP (which allows only the copy script's hash), and loosening the CSP would test another page.
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

type AxeFinding = { id: string; impact: string | null; help: string; nodes: { target: string[] }[] };

async function seriousAxeFindings(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: Document, options: object): Promise<unknown> } }).axe;
    const result = (await axe.run(document, { resultTypes: ["violations"] })) as { violations: AxeFinding[] };
    return result.violations;
  });
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

/** How far the page scrolls sideways (0 when it fits), and any button inside a link or link inside a button. */
function layoutProblems(page: Page) {
  return page.evaluate(() => ({
    overflow: (document.scrollingElement?.scrollWidth ?? 0) - window.innerWidth,
    nested: document.querySelectorAll("a button, button a, a a, button button").length,
  }));
}

for (const mode of EMBEDDED_MODES) {
  const name = `every page at 1280 and 390 px, light and dark (${mode})`;
  describe.skipIf(!hasChromium)(hasChromium ? name : `${name} (SKIPPED: ${CHROMIUM} is missing)`, () => {
    let hatch: TestHatch;
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    const cspErrors: string[] = [];
    /** Page name → path, filled in as the person gets there. */
    const NOT_FOUND_PATH = "/no-such-page";
    const signedOut: Record<string, string> = {
      landing: "/",
      install: "/mcp",
      docs: "/mcp/docs",
      "sign-in": "/signin",
      "sign-up": "/signup",
      "not found": NOT_FOUND_PATH,
    };
    const signedIn: Record<string, string> = {
      "landing (signed in)": "/",
      tokens: "/dashboard/tokens",
      "AI key": "/dashboard/ai-keys?scope=mine",
      billing: "/dashboard/billing",
      "dev outbox": "/dev/outbox",
    };
    let email = "";

    beforeAll(async () => {
      hatch = await startTestHatch(mode, { gatewayConfig: { devPages: true } });
      const person = await userWithToken(hatch, { name: "Pat Pages" });
      email = person.email;
      const client = await connectClient(hatch, person.accessToken);
      // An app whose declared API needs a secret (the secret page), and its delete waiting for a yes (a confirm page).
      await callOk(client, "publish", {
        name: "Weather",
        visibility: "private",
        files: [
          { path: "index.html", content: "<!doctype html><title>Weather</title><h1>Weather</h1>" },
          {
            path: "service.json",
            content: JSON.stringify({
              apis: { weather: { url: "https://api.weather.example/v1", secret: "WEATHER_KEY" } },
            }),
          },
        ],
      });
      const listed = await callOk<{ apps: { address: string }[] }>(client, "list_tools", {});
      const app = listed.apps[0]!.address;
      const secret = await callOk<{ url: string }>(client, "tool_secret", { address: app, name: "WEATHER_KEY" });
      signedIn.secret = new URL(secret.url).pathname + new URL(secret.url).search;
      signedIn.dashboard = "/dashboard";
      signedIn["app page"] = `/dashboard/apps/${app}`;
      signedIn["organization page"] = "/dashboard/org";
      const asked = await callOk<{ userAction: { url: string } }>(client, "delete_tool", { address: app });
      signedIn.confirm = new URL(asked.userAction.url).pathname;
      await client.close();

      // Someone else's organization invites this person (the invitation page, and a mail in their dev outbox).
      const inviter = await userWithToken(hatch, { name: "Ivy Inviter" });
      const inviterClient = await connectClient(hatch, inviter.accessToken);
      await callOk(inviterClient, "org_setup", { action: "create", name: `Pages Co ${mode}` });
      await callOk(inviterClient, "org_invite", { emails: [email], role: "member" });
      const invite = await eventually(() => invitationLink(hatch, email).catch(() => undefined), "the invitation mail");
      signedIn.invitation = new URL(invite).pathname;
      await inviterClient.close();
      // A public app of someone else's: signing in to it asks first (the consent page).
      await seedApp((hatch.services.get("apps") as AppsService).context, {
        owner: { id: inviter.id, email: inviter.email, name: "Ivy Inviter" },
        address: `ivys-guestbook-${mode}`,
        name: "Ivy's guestbook with a rather long name",
        visibility: "public",
        files: { "index.html": "<h1>Guestbook</h1>" },
      });
      signedIn["app consent"] = `/apps/signin?app=ivys-guestbook-${mode}&path=/`;

      browser = await launchChromium();
      context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: hatch.baseUrl });
      page = await context.newPage();
      page.on("console", (message) => {
        if (/Content.Security.Policy/i.test(message.text())) cspErrors.push(message.text());
      });
    }, TEST_TIMEOUT_MS);

    afterAll(async () => {
      await browser?.close();
      await hatch?.stop();
    }, TEST_TIMEOUT_MS);

    async function checkPage(label: string, path: string) {
      const problems: string[] = [];
      for (const size of SIZES) {
        await page.setViewportSize({ width: size.width, height: size.height });
        // The desktop size is checked light and the phone size dark: both schemes and both layouts get axe's look.
        const scheme = size.width > 600 ? "light" : "dark";
        await page.emulateMedia({ colorScheme: scheme });
        const response = await page.goto(`${hatch.baseUrl}${path}`);
        const expected = path === NOT_FOUND_PATH ? 404 : 200;
        if (response?.status() !== expected) problems.push(`${label} ${size.name}: status ${response?.status()}`);
        const layout = await layoutProblems(page);
        if (layout.overflow > 0) problems.push(`${label} ${size.name}: ${layout.overflow}px sideways scroll`);
        if (layout.nested > 0) problems.push(`${label} ${size.name}: ${layout.nested} nested links/buttons`);
        for (const finding of await seriousAxeFindings(page))
          problems.push(`${label} ${size.name} ${scheme}: ${finding}`);
      }
      return problems;
    }

    test("the checks can fail: sideways scroll, a button in a link and low contrast are all caught", async () => {
      await page.setViewportSize({ width: 390, height: 844 });
      // On a real page, under its CSP: the same harness the pages below pass.
      await page.goto(`${hatch.baseUrl}/`);
      await page.evaluate(() =>
        document
          .querySelector("main")
          ?.insertAdjacentHTML(
            "beforeend",
            `<div style="width:600px">wide</div><a href="/x"><button>Go</button></a><button><a href="/y">In</a></button><p style="color:#999;background:#aaa">faint</p>`,
          ),
      );
      expect(await layoutProblems(page)).toEqual({ overflow: expect.any(Number), nested: 2 });
      const found = (await seriousAxeFindings(page)).map((f) => f.split(" ")[0]);
      expect(found).toEqual(expect.arrayContaining(["color-contrast", "nested-interactive"]));
      expect((await layoutProblems(page)).overflow).toBeGreaterThan(0);
    });

    test(
      "signed out: landing, install, docs, sign-in, sign-up",
      async () => {
        const problems: string[] = [];
        for (const [label, path] of Object.entries(signedOut)) problems.push(...(await checkPage(label, path)));
        expect(problems).toEqual([]);
        expect(cspErrors).toEqual([]);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "the install page: copy buttons copy the URL and the Cursor and VS Code files; the URL stays on one line at 390 px",
      async () => {
        await page.setViewportSize({ width: 390, height: 844 });
        await page.emulateMedia({ colorScheme: "light" });
        // Broken only where it must be: the plain URL fits a phone's line, so it moves to a line of its own whole.
        await page.goto(`${hatch.baseUrl}/mcp`);
        const plain = page.locator("main code.copy").first();
        expect(await plain.innerText()).toBe(hatch.mcpUrl);
        expect(await plain.evaluate((el) => el.getClientRects().length)).toBe(1);

        await page.goto(`${hatch.baseUrl}/mcp?features=apps&read_only=true`);
        const url = `${hatch.mcpUrl}?features=apps&read_only=true`;
        expect(await page.locator("main code.copy").first().innerText()).toBe(url);

        // A button says it copied (the status line screen readers hear), then the clipboard holds the text.
        const copy = async (what: string) => {
          await page.getByRole("button", { name: `Copy ${what}` }).click();
          await page.waitForFunction(
            (said) => document.querySelector("[role=status]")?.textContent === said,
            `Copied ${what} to the clipboard.`,
          );
          return page.evaluate(() => navigator.clipboard.readText());
        };
        expect(await copy("the MCP server URL")).toBe(url);
        expect(JSON.parse(await copy("the Cursor configuration"))).toEqual({ mcpServers: { hatch: { url } } });
        expect(JSON.parse(await copy("the VS Code configuration"))).toEqual({
          servers: { hatch: { type: "http", url } },
        });
        expect(await copy("the Claude Code command")).toBe(`claude mcp add --transport http hatch ${url}`);

        // One name in both deep links.
        const cursorLink = await page.getByRole("link", { name: "Add to Cursor" }).getAttribute("href");
        const vscodeLink = await page.getByRole("link", { name: "Add to VS Code" }).getAttribute("href");
        expect(new URL(cursorLink!).searchParams.get("name")).toBe("Hatch");
        expect(JSON.parse(decodeURIComponent(vscodeLink!.replace("vscode:mcp/install?", ""))).name).toBe("Hatch");
        expect(cspErrors).toEqual([]);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "the docs: this deployment's app addresses, a table of contents that leads to its sections, code blocks copy",
      async () => {
        await page.setViewportSize({ width: 390, height: 844 });
        await page.goto(`${hatch.baseUrl}/mcp/docs`);
        const text = await page.locator("main").innerText();
        const appHost = new URL(hatch.appHostUrl);
        expect(text).toContain(`${appHost.protocol}//my-todo.${appHost.host}`);
        expect(text).not.toContain("localhost:3001");
        const contents = page.getByRole("navigation", { name: "Contents" });
        await contents.getByRole("link", { name: "Limits", exact: true }).click();
        expect(new URL(page.url()).hash).toBe("#limits");
        expect(await page.locator("#limits").isVisible()).toBe(true);

        const firstBlock = page.locator("main pre").first();
        const expected = (await firstBlock.evaluate((el) => el.textContent ?? "")).replace(/\n$/, "");
        await page.getByRole("button", { name: "Copy this code" }).first().click();
        expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(expected);
        // Cards at 390 px: each cell of a table row names its column.
        expect(await page.locator("main td[data-label]").count()).toBeGreaterThan(0);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "signed in: landing, dashboard, app and organization pages, Tokens, a confirm page, the secret and AI key pages, billing, an invitation, the dev outbox, an app's consent page",
      async () => {
        await page.setViewportSize({ width: 1280, height: 800 });
        await page.emulateMedia({ colorScheme: "light" });
        await page.goto(`${hatch.baseUrl}/signin`);
        await page.getByLabel("Email").fill(email);
        await page.getByLabel("Password").fill(PASSWORD);
        await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Sign in" }).click()]);
        expect(await page.locator("header").innerText()).toContain(email);

        // A client waiting for approval: the consent page too.
        const callbackUri = "http://127.0.0.1:9/callback";
        const registered = (await (
          await fetch(`${hatch.baseUrl}/oauth/register`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ client_name: "Pages Client", redirect_uris: [callbackUri] }),
          })
        ).json()) as { client_id: string };
        const authorize = new URLSearchParams({
          response_type: "code",
          client_id: registered.client_id,
          redirect_uri: callbackUri,
          code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
          code_challenge_method: "S256",
          state: "pages",
          resource: hatch.mcpUrl,
        });
        const pages = { ...signedIn, consent: `/oauth/authorize?${authorize}` };

        const problems: string[] = [];
        for (const [label, path] of Object.entries(pages)) problems.push(...(await checkPage(label, path)));
        expect(problems).toEqual([]);
        expect(cspErrors).toEqual([]);

        // The Tokens page at phone size: its table is cards, every cell labelled by its column.
        await page.setViewportSize({ width: 390, height: 844 });
        await page.goto(`${hatch.baseUrl}/dashboard/tokens`);
        const cells = page.locator("main tbody td[data-label]");
        expect(await cells.count()).toBeGreaterThan(0);
        expect(await cells.first().evaluate((el) => getComputedStyle(el).display)).toBe("grid");
      },
      TEST_TIMEOUT_MS,
    );
  });
}
