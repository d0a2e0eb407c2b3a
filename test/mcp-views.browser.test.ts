import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { TOOL_CONTRACTS } from "@hatch/contracts";
import type { Browser, Frame, Page } from "playwright-core";
import { axeFindings } from "./support/axe.ts";
import { hasChromium, launchChromium } from "./support/chromium.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectFormClient, userWithToken } from "./support/mcp.ts";

// Each of Hatch's MCP Apps views hosted the way a client hosts it: the view's HTML from resources/read, served from an
// origin of its own with the CSP its `_meta.ui.csp` asks for (as the extension's specification tells a host to build
// it), in a frame of a host page that runs the extension's AppBridge; the tool result a real call gave; the view's
// tool calls going back through the bridge to Hatch with the SDK's real client. SCREENSHOTS=1 writes docs/views/.

setDefaultTimeout(30_000);

/** The demo app: a page and server code that logs what it does. */
const demoFiles = (title: string) => [
  { path: "index.html", content: `<!doctype html><title>Todo</title><h1>${title}</h1>` },
  { path: "service.json", content: JSON.stringify({ server: "api/index.js" }) },
  {
    path: "api/index.js",
    content: `export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === "/api/hello") { console.info("said hello to", url.searchParams.get("name")); return new Response("hello"); }
    if (url.pathname === "/api/fail") { console.error("could not save the todo: the list is full"); return new Response("full", { status: 507 }); }
    return new Response("not found", { status: 404 });
  },
};`,
  },
];

/** Words a person should not meet in a view: tool names that are not English words, and a call to the AI. */
const FOR_AI_WORDS = [
  ...TOOL_CONTRACTS.map((c) => c.name).filter((n) => n.includes("_") || n === "whoami"),
  "tool_logs_tail",
  "Call ",
  "the user",
];

const UI = { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } };

type Csp = {
  connectDomains?: string[];
  resourceDomains?: string[];
  frameDomains?: string[];
  baseUriDomains?: string[];
};
type Result = { content: unknown[]; _meta?: Record<string, unknown>; isError?: boolean };

/** The CSP a host builds from a view's declared domains (the extension's specification, "Security Implications"). */
function cspOf(csp: Csp): string {
  const resources = (csp.resourceDomains ?? []).join(" ");
  return [
    "default-src 'none'",
    `script-src 'self' 'unsafe-inline' ${resources}`,
    `style-src 'self' 'unsafe-inline' ${resources}`,
    `connect-src 'self' ${(csp.connectDomains ?? []).join(" ")}`,
    `img-src 'self' data: ${resources}`,
    `font-src 'self' ${resources}`,
    `media-src 'self' data: ${resources}`,
    `frame-src ${(csp.frameDomains ?? []).join(" ") || "'none'"}`,
    "object-src 'none'",
    `base-uri ${(csp.baseUriDomains ?? []).join(" ") || "'self'"}`,
  ].join("; ");
}

describe.skipIf(!hasChromium)("MCP Apps views in a host (headless Chromium)", () => {
  let hatch: TestHatch;
  let client: Client;
  let browser: Browser;
  let page: Page;
  let hostServer: ReturnType<typeof Bun.serve>;
  let sandboxServer: ReturnType<typeof Bun.serve>;
  const documents = new Map<string, { html: string; csp: string }>();
  const calls: Array<{ name: string; arguments?: Record<string, unknown> }> = [];
  const opened: string[] = [];
  let address = "";

  beforeAll(async () => {
    hatch = await startTestHatch("embedded");
    // The preview frame's CSP names where apps are served; here the app host listens on a port of its own.
    hatch.config.appOrigins.splice(0, Infinity, `http://*.localhost:${new URL(hatch.appHostUrl).port}`);
    const alice = await userWithToken(hatch, { name: "Alice Views" });
    client = new Client({ name: "claude-ai", version: "1.0.0" }, { capabilities: { extensions: UI } as object });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(hatch.mcpUrl), {
        requestInit: { headers: { Authorization: `Bearer ${alice.accessToken}` } },
      }),
    );
    const built = await Bun.build({
      entrypoints: [new URL("./support/views-host-page.ts", import.meta.url).pathname],
      target: "browser",
    });
    const hostScript = await built.outputs[0]!.text();
    // The host and the views on different origins, as the extension asks of a web host.
    hostServer = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (request) =>
        new URL(request.url).pathname === "/host.js"
          ? new Response(hostScript, { headers: { "Content-Type": "text/javascript" } })
          : new Response(
              '<!doctype html><html lang="en"><head><title>Host</title></head><body><main><h1>Host</h1></main><script type="module" src="/host.js"></script></body></html>',
              { headers: { "Content-Type": "text/html" } },
            ),
    });
    sandboxServer = Bun.serve({
      hostname: "localhost",
      port: 0,
      fetch: (request) => {
        const doc = documents.get(new URL(request.url).pathname.slice(1));
        if (!doc) return new Response("not found", { status: 404 });
        return new Response(doc.html, {
          headers: { "Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": doc.csp },
        });
      },
    });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 760, height: 900 } });
    await page.exposeFunction("hostCallTool", async (params: { name: string; arguments?: Record<string, unknown> }) => {
      calls.push({ name: params.name, arguments: params.arguments });
      return client.callTool(params);
    });
    await page.exposeFunction("hostOpenLink", async (url: string) => {
      opened.push(url);
    });
    await page.goto(`http://127.0.0.1:${hostServer.port}/`);
    await page.waitForFunction(() => "showView" in window);

    // A public app (its question answered yes by a client that shows forms): its preview opens without signing in.
    const { client: asker } = await connectFormClient(hatch, alice.accessToken, () => ({
      action: "accept",
      content: { confirm: true },
    }));
    ({ address } = await callOk<{ address: string }>(asker, "publish", {
      name: "Todo Demo",
      visibility: "public",
      files: demoFiles("Todo Demo"),
    }));
    await asker.close();
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    hostServer?.stop(true);
    sandboxServer?.stop(true);
    await client?.close();
    await hatch?.stop();
  });

  /** Reads the view, calls the tool, shows both in the host; returns the view's frame once it shows the result. */
  async function show(
    uri: string,
    tool: string,
    args: Record<string, unknown>,
  ): Promise<{ frame: Frame; result: Result }> {
    const { contents } = await client.readResource({ uri });
    const content = contents[0] as unknown as { text: string; _meta: { ui: { csp: Csp } } };
    const id = uri.slice("ui://hatch/".length);
    documents.set(id, { html: content.text, csp: cspOf(content._meta.ui.csp) });
    const result = (await client.callTool({ name: tool, arguments: args })) as Result;
    expect(result.isError).toBeFalsy();
    await page.evaluate(
      ([src, a, r]) =>
        (window as unknown as { showView(s: string, a: unknown, r: unknown): Promise<void> }).showView(
          src as string,
          a,
          r,
        ),
      [`http://localhost:${sandboxServer.port}/${id}`, args, result] as const,
    );
    const frame = page.frame({ url: new RegExp(`/${id}$`) })!;
    await frame.waitForSelector("main#view h1");
    return { frame, result };
  }

  /** What the view's CSP refuses when the view tries to reach `url` (the directive it broke), or null. */
  const refused = (frame: Frame, how: "fetch" | "img" | "frame", url: string) =>
    frame.evaluate(
      ([how, url]) =>
        new Promise<string | null>((resolve) => {
          // The probe goes once the answer is known, so the view is checked as it is.
          let probe: HTMLElement | null = null;
          const done = (directive: string | null) => {
            probe?.remove();
            resolve(directive);
          };
          document.addEventListener("securitypolicyviolation", (e) => done(e.effectiveDirective), { once: true });
          setTimeout(() => done(null), 2_000);
          if (how === "fetch") fetch(url).catch(() => {});
          else {
            const el = document.createElement(how === "img" ? "img" : "iframe");
            el.src = url;
            probe = el;
            document.body.append(el);
          }
        }),
      [how, url] as const,
    );

  async function problems(frame: Frame, name: string): Promise<string[]> {
    if (process.env.SCREENSHOTS === "1") {
      mkdirSync("docs/views", { recursive: true });
      await (await frame.frameElement()).screenshot({ path: `docs/views/${name}.png` });
    }
    // A view is read by a person: no tool names or instructions meant for an AI (as the dashboard words test asks).
    const text = (await frame.textContent("main")) ?? "";
    const forAi = FOR_AI_WORDS.filter((word) => text.includes(word)).map((word) => `${name}: says "${word}"`);
    // Every view's CSP refuses a connection and an image from anywhere (Hatch's own origin included).
    const csp: string[] = [];
    if ((await refused(frame, "fetch", `${hatch.baseUrl}/healthz`)) !== "connect-src")
      csp.push(`${name}: fetch allowed`);
    if ((await refused(frame, "img", `${hatch.baseUrl}/favicon.ico`)) !== "img-src") csp.push(`${name}: image allowed`);
    // axe-core in the light and the dark scheme (the views follow the system's, as the pages do).
    const light = await axeFindings(frame);
    await page.emulateMedia({ colorScheme: "dark" });
    const dark = (await axeFindings(frame)).map((finding) => `dark: ${finding}`);
    await page.emulateMedia({ colorScheme: "light" });
    return [...forAi, ...csp, ...light, ...dark];
  }

  test("the publish view: the app's address, version and audience, its live preview; nothing else may load", async () => {
    const { frame } = await show("ui://hatch/publish", "publish", {
      address,
      files: demoFiles("Todo Demo v2"),
    });
    expect(await frame.textContent("h1")).toBe("Todo Demo is live");
    expect(await frame.textContent("main")).toContain("Version 2");
    expect(await frame.textContent("main")).toContain("Public: anyone with the link");
    const preview = await frame.getAttribute("iframe.preview", "src");
    expect(preview).toContain(`${address}.localhost`);
    // The preview's origin is allowed as a frame; anything else is refused by the view's CSP.
    expect(await refused(frame, "fetch", `${hatch.baseUrl}/healthz`)).toBe("connect-src");
    expect(await refused(frame, "img", "https://tracker.example/pixel.gif")).toBe("img-src");
    expect(await refused(frame, "frame", "https://elsewhere.example/")).toBe("frame-src");
    expect(await refused(frame, "frame", preview!)).toBeNull();
    // Links leave through the host.
    await frame.click("text=Manage it");
    expect(opened.at(-1)).toBe(`${hatch.baseUrl}/dashboard/apps/${address}`);
    expect(await problems(frame, "publish")).toEqual([]);
  });

  test("the apps view lists the user's apps as the dashboard does", async () => {
    const { frame } = await show("ui://hatch/apps", "list_tools", {});
    expect(await frame.getAttribute(`article[data-address="${address}"]`, "data-address")).toBe(address);
    expect(await frame.textContent(`article[data-address="${address}"] h3`)).toContain("Todo Demo");
    expect(await problems(frame, "apps")).toEqual([]);
  });

  test("the statistics view: the chart, and another period asked through the host", async () => {
    const { frame } = await show("ui://hatch/stats", "tool_stats", { address });
    expect(await frame.locator("svg.chart g").count()).toBe(7);
    calls.length = 0;
    await frame.selectOption("select[name=days]", "14");
    await frame.click("form[data-tool=tool_stats] button");
    await frame.waitForFunction(() => document.querySelectorAll("svg.chart g").length === 14);
    expect(calls).toEqual([{ name: "tool_stats", arguments: { address, days: 14 } }]);
    expect(await problems(frame, "stats")).toEqual([]);
  });

  test("the logs view: a level filter and following new lines, both tool calls through the host", async () => {
    const app = hatch.appHostUrl.replace("//", `//${address}.`);
    for (const name of ["Ada", "Grace"]) expect((await fetch(`${app}/api/hello?name=${name}`)).status).toBe(200);
    expect((await fetch(`${app}/api/fail`)).status).toBe(507);
    const { frame } = await show("ui://hatch/logs", "tool_logs", { address });
    expect(await frame.textContent("h1")).toBe(`Logs of ${address}`);
    expect(await frame.locator("#log-lines li").allTextContents()).toEqual([
      expect.stringContaining("info said hello to Ada"),
      expect.stringContaining("info said hello to Grace"),
      expect.stringContaining("error could not save the todo: the list is full"),
    ]);
    calls.length = 0;
    await frame.selectOption("select[name=level]", "error");
    await frame.click("form[data-tool=tool_logs] button");
    await frame.waitForFunction(() => document.querySelectorAll("#log-lines li").length === 1);
    expect(calls).toEqual([{ name: "tool_logs", arguments: { address, level: "error" } }]);
    // Following: the view asks where the log ends, then for what comes after, and adds it.
    await frame.check("input[data-follow]");
    await frame.waitForFunction(() => document.getElementById("log-lines")?.dataset.newest !== undefined);
    expect(calls.at(-1)).toEqual({ name: "tool_logs_tail", arguments: { address, level: "error" } });
    expect(await frame.textContent("#status")).toContain("Following new lines");
    expect((await fetch(`${app}/api/hello?name=Linus`)).status).toBe(200);
    expect((await fetch(`${app}/api/fail`)).status).toBe(507);
    await frame.waitForFunction(() => document.querySelectorAll("#log-lines li").length === 2, undefined, {
      timeout: 20_000,
    });
    expect(await frame.locator("#log-lines li").last().textContent()).toContain("error could not save the todo");
    expect(calls.at(-1)).toMatchObject({ name: "tool_logs_tail", arguments: { address, level: "error" } });
    expect(calls.at(-1)?.arguments?.after).toBeNumber();
    await frame.uncheck("input[data-follow]");
    expect(await problems(frame, "logs")).toEqual([]);
  });

  test("the custom domain view: the DNS records with copy buttons, the steps, and checking again", async () => {
    const { frame } = await show("ui://hatch/domain", "custom_domain", { address, hostname: "todo.example.com" });
    expect(await frame.textContent("article[data-domain='todo.example.com'] h3")).toBe("todo.example.com");
    expect(await frame.locator("ol.progress li[aria-current=step]").textContent()).toContain("DNS records");
    const copies = frame.locator("table button.copy-button");
    expect(await copies.count()).toBeGreaterThanOrEqual(2);
    calls.length = 0;
    await frame.click("text=Check todo.example.com again");
    await frame.waitForFunction(() => document.querySelector("main")?.getAttribute("aria-busy") === null);
    expect(calls).toEqual([{ name: "custom_domains", arguments: { address } }]);
    expect(await frame.textContent("h1")).toBe(`Domains of ${address}`);
    expect(await problems(frame, "domain")).toEqual([]);
  });

  test("the domain quote view: both prices, and the purchase stays the user's to confirm on Hatch's page", async () => {
    const found = await callOk<{ available: Record<string, unknown>; unavailable: string[] }>(client, "find_domain", {
      query: "todoviews",
    });
    const { frame: offers } = await show("ui://hatch/domain-quote", "find_domain", { query: "todoviews" });
    const domain = Object.keys(found.available)[0]!;
    expect(await offers.locator("tr[data-offer]").count()).toBe(
      Object.keys(found.available).length + found.unavailable.length,
    );
    expect(await offers.textContent(`tr[data-offer="${domain}"]`)).toContain("Yes");
    const { frame, result } = await show("ui://hatch/domain-quote", "buy_domain", { domain });
    expect((result as { structuredContent?: { status?: string } }).structuredContent?.status).toBe("needs_user");
    expect(await frame.textContent("h1")).toBe(`Buy ${domain}`);
    expect(await frame.textContent("main")).toContain("Waiting for your confirmation");
    // No button buys: the only way on is the confirm page, opened by the person through the host.
    expect(await frame.locator("form[data-tool=buy_domain], [data-tool=buy_domain]").count()).toBe(0);
    // Here a card is asked for first (the Free plan has none): the page that asks is where the link leads.
    const action = (result as { structuredContent?: { userAction?: { url?: string } } }).structuredContent?.userAction;
    await frame.click("text=Continue on Hatch's page");
    expect(opened.at(-1)).toBe(action!.url!);
    expect(action!.url!.startsWith(`${hatch.baseUrl}/`)).toBe(true);
    expect(await problems(frame, "domain-quote")).toEqual([]);
  });

  test("the billing view: the plan and the usage against its limits", async () => {
    const { frame } = await show("ui://hatch/billing", "billing", {});
    expect(await frame.getAttribute("#plan", "data-plan")).toBe("free");
    expect(await frame.locator("li[data-usage=apps] .meter").count()).toBe(1);
    expect(await frame.textContent("li[data-usage=apps]")).toMatch(/Apps: 1 of \d+/);
    expect(await problems(frame, "billing")).toEqual([]);
  });

  test("a failed call shows its words in the view, not a stack", async () => {
    const { frame } = await show("ui://hatch/stats", "tool_stats", { address });
    await frame.evaluate(() => {
      const form = document.querySelector("form[data-tool=tool_stats]") as HTMLFormElement;
      form.dataset.args = JSON.stringify({ address: "no-such-app-here" });
    });
    await frame.click("form[data-tool=tool_stats] button");
    await frame.waitForSelector("p.error[role=alert]");
    // The person reads their own words: no tool name, no error code, no stack.
    const said = await frame.textContent("p.error");
    expect(said).toContain('You have no app at the address "no-such-app-here".');
    expect(said).not.toMatch(/list_tools|\(not_found\)|\bat \S+\.ts\b/);
  });
});
