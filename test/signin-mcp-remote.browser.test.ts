import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Browser } from "playwright-core";
import { CHROMIUM, hasChromium, launchChromium } from "./support/chromium.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { textOf } from "./support/mcp.ts";
import { mcpRemote } from "./support/mcp-remote.ts";

// A person connects a real third-party MCP client, mcp-remote (the stdio bridge many desktop clients use), to Hatch
// for the first time: mcp-remote prints the sign-in URL, the person opens it in a browser, signs up from the header
// link (which keeps the pending authorization), approves, and the AI's call goes through. The MCP side is driven by
// the SDK's Client over mcp-remote's stdio; the person's side by headless Chromium.

const MCP_REMOTE = join(import.meta.dir, "../node_modules/mcp-remote/dist/proxy.js");
const suiteName = hasChromium
  ? "mcp-remote: sign-up, consent and a tool call"
  : `mcp-remote: sign-up, consent and a tool call (SKIPPED: ${CHROMIUM} is missing; apt-get install -y chromium)`;

describe.skipIf(!hasChromium)(suiteName, () => {
  let hatch: TestHatch;
  let browser: Browser;
  let home = "";

  beforeAll(async () => {
    hatch = await startTestHatch("embedded");
    browser = await launchChromium();
    home = mkdtempSync(join(tmpdir(), "hatch-mcp-remote-"));
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await hatch?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  test("from the printed URL to whoami, through the header's sign-up", async () => {
    // Its tokens go to a fresh folder.
    const { transport, printedUrl } = mcpRemote(MCP_REMOTE, hatch.mcpUrl, home);
    const client = new Client({ name: "mcp-remote-test", version: "1.0.0" }, { capabilities: {} });
    const connected = client.connect(transport);
    try {
      const page = await (await browser.newContext()).newPage();
      await page.goto(await printedUrl);
      expect(new URL(page.url()).pathname).toBe("/signin");
      await Promise.all([
        page.waitForNavigation(),
        page.locator("header").getByRole("link", { name: "Sign up" }).click(),
      ]);
      expect(await page.getByRole("heading", { level: 1 }).innerText()).toMatch(/^Sign up to connect .+ to Hatch$/);
      await page.getByLabel("Name").fill("Remo Remote");
      await page.getByLabel("Email").fill("remo@example.com");
      await page.getByLabel("Password").fill("correct horse battery");
      await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Sign up", exact: true }).click()]);
      expect(await page.getByRole("heading", { level: 1 }).innerText()).toMatch(/^Connect .+\?$/);
      // Approving sends the browser to mcp-remote's own callback server, which takes the code and finishes the sign-in.
      await Promise.all([
        page.waitForURL((url) => url.pathname === "/oauth/callback"),
        page.getByRole("button", { name: "Allow full access" }).click(),
      ]);

      await connected;
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools).toContain("publish");
      const whoami = await client.callTool({ name: "whoami", arguments: {} });
      expect(whoami.isError).toBeFalsy();
      expect(textOf(whoami)).toContain("remo@example.com");
    } finally {
      await client.close().catch(() => {});
    }
  }, 120_000);
});
