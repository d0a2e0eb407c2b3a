import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client as Client2026, StreamableHTTPClientTransport as Transport2026 } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { TOOL_CONTRACTS } from "@hatch/contracts";
import { TOOL_LIST_BUDGET_BYTES } from "../gateway/src/mcp/catalog.ts";
import { VIEW_META_KEY } from "../gateway/src/mcp/views/index.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

// MCP Apps (io.modelcontextprotocol/ui) at the protocol: a client that declares the extension gets the views as
// resources, their URIs on the tools, the view-only tool marked for the app, and each result's markup in `_meta`; a
// client that does not gets exactly what it got before. test/mcp-views.browser.test.ts shows the views in a host.

const UI = { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } };
const VIEW_URIS = [
  "ui://hatch/publish",
  "ui://hatch/apps",
  "ui://hatch/stats",
  "ui://hatch/logs",
  "ui://hatch/domain",
  "ui://hatch/domain-quote",
  "ui://hatch/billing",
];

type Listed = { name: string; _meta?: { ui?: { resourceUri?: string; visibility?: string[] } } };

async function connect2025Views(hatch: TestHatch, token: string, query = ""): Promise<Client> {
  const client = new Client({ name: "claude-ai", version: "1.0.0" }, { capabilities: { extensions: UI } as object });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${hatch.mcpUrl}${query}`), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

async function connect2026(hatch: TestHatch, token: string, views: boolean): Promise<Client2026> {
  const client = new Client2026(
    { name: "claude-ai", version: "3.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } }, capabilities: views ? { extensions: UI } : {} },
  );
  await client.connect(
    new Transport2026(new URL(hatch.mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
  );
  return client;
}

const page = (title: string) =>
  `<!doctype html><html lang="en"><head><title>${title}</title></head><body><h1>${title}</h1></body></html>`;

for (const mode of MODES) {
  describe(`MCP Apps views (${mode})`, () => {
    let hatch: TestHatch;
    let alice: Awaited<ReturnType<typeof userWithToken>>;
    let plain: Client;
    let views2025: Client;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      alice = await userWithToken(hatch, { name: "Alice Views" });
      plain = await connectClient(hatch, alice.accessToken, { name: "claude-ai", version: "1.0.0" });
      views2025 = await connect2025Views(hatch, alice.accessToken);
    }, 60_000);
    afterAll(async () => {
      await plain?.close();
      await views2025?.close();
      await hatch?.stop();
    });

    test("a client without the extension sees nothing new: no view URIs, no view-only tool, no resources", async () => {
      const { tools } = await plain.listTools();
      expect(tools.map((t) => t.name)).toEqual(TOOL_CONTRACTS.map((c) => c.name));
      expect(tools.filter((t) => t._meta !== undefined)).toEqual([]);
      expect(plain.getServerCapabilities()?.resources).toBeUndefined();
      await expect(plain.listResources()).rejects.toThrow(/Method not found/);
      await expect(plain.callTool({ name: "tool_logs_tail", arguments: { address: "x" } })).rejects.toThrow(
        /Unknown tool "tool_logs_tail"/,
      );
      const listed = await plain.callTool({ name: "list_tools", arguments: {} });
      expect(listed._meta?.[VIEW_META_KEY]).toBeUndefined();
    });

    test("a 2025 client with the extension: tools name their views, the view-only tool is for the app, the list fits", async () => {
      const { tools } = (await views2025.listTools()) as { tools: Listed[] };
      const byName = new Map(tools.map((t) => [t.name, t]));
      expect(byName.get("publish")?._meta?.ui?.resourceUri).toBe("ui://hatch/publish");
      expect(byName.get("list_tools")?._meta?.ui?.resourceUri).toBe("ui://hatch/apps");
      expect(byName.get("tool_stats")?._meta?.ui?.resourceUri).toBe("ui://hatch/stats");
      expect(byName.get("tool_logs")?._meta?.ui?.resourceUri).toBe("ui://hatch/logs");
      expect(byName.get("custom_domain")?._meta?.ui?.resourceUri).toBe("ui://hatch/domain");
      expect(byName.get("buy_domain")?._meta?.ui?.resourceUri).toBe("ui://hatch/domain-quote");
      expect(byName.get("billing")?._meta?.ui?.resourceUri).toBe("ui://hatch/billing");
      // The stable key only (the drafts' flat "ui/resourceUri" would cost bytes in every model's context).
      expect(Object.keys(byName.get("billing")?._meta ?? {})).toEqual(["ui"]);
      expect(byName.get("whoami")?._meta).toBeUndefined();
      expect(byName.get("tool_logs_tail")?._meta?.ui).toEqual({ resourceUri: "ui://hatch/logs", visibility: ["app"] });
      // Only the view-only tool is for the app alone; the model's list is the 29 tools.
      expect(
        tools
          .filter((t) => t._meta?.ui?.visibility?.includes("app") && !t._meta.ui.visibility.includes("model"))
          .map((t) => t.name),
      ).toEqual(["tool_logs_tail"]);
      expect(JSON.stringify(tools).length).toBeLessThan(TOOL_LIST_BUDGET_BYTES);
    });

    test("each view is a ui:// resource: HTML for MCP Apps with its CSP, no connections, frames only for the preview", async () => {
      const { resources } = await views2025.listResources();
      expect(resources.map((r) => r.uri)).toEqual(VIEW_URIS);
      for (const r of resources) expect(r.mimeType).toBe("text/html;profile=mcp-app");
      for (const uri of VIEW_URIS) {
        const { contents } = await views2025.readResource({ uri });
        const [content] = contents as Array<{
          uri: string;
          mimeType: string;
          text: string;
          _meta: { ui: { csp: Record<string, string[]> } };
        }>;
        expect(content!.mimeType).toBe("text/html;profile=mcp-app");
        expect(content!.text).toStartWith("<!doctype html>");
        expect(content!.text).toContain('<html lang="en">');
        const csp = content!._meta.ui.csp;
        expect(csp.connectDomains).toBeUndefined();
        expect(csp.resourceDomains).toBeUndefined();
        if (uri === "ui://hatch/publish") expect(csp.frameDomains).toEqual(hatch.config.appOrigins);
        else expect(csp.frameDomains).toBeUndefined();
      }
      await expect(views2025.readResource({ uri: "ui://hatch/nothing" })).rejects.toThrow(/Resource not found/);
    });

    test("a published app's result carries its view: the address, the version, who can open it", async () => {
      const result = await views2025.callTool({
        name: "publish",
        arguments: {
          name: "View Demo",
          visibility: "private",
          files: [{ path: "index.html", content: page("View Demo") }],
        },
      });
      expect(result.isError).toBeFalsy();
      const data = result.structuredContent as { url: string; address: string };
      const view = (result._meta as Record<string, { html: string }>)[VIEW_META_KEY]!;
      // A private app asks its visitors to sign in, which a frame in the client cannot: no preview, and why.
      expect(view.html).not.toContain("<iframe");
      expect(view.html).toContain("not previewed here");
      expect(view.html).toContain(data.url);
      expect(view.html).toContain("Version 1");
      expect(view.html).toContain("Private: only you");
      expect(view.html).toContain(`href="${hatch.baseUrl}/dashboard/apps/${data.address}"`);
      // The model's text is the tool's own, unchanged by the view.
      expect(textOf(result)).not.toContain("<");
      const plainList = await plain.callTool({ name: "list_tools", arguments: {} });
      const viewList = await views2025.callTool({ name: "list_tools", arguments: {} });
      expect(viewList.content).toEqual(plainList.content);
      expect(viewList.structuredContent).toEqual(plainList.structuredContent);
      expect((viewList._meta as Record<string, { html: string }>)[VIEW_META_KEY]!.html).toContain("View Demo");
    });

    test("a publish that waits for the user's yes shows the question in a person's words and the page to answer it", async () => {
      const result = await views2025.callTool({
        name: "publish",
        arguments: { name: "Open Demo", visibility: "public", files: [{ path: "index.html", content: page("Open") }] },
      });
      const action = (result.structuredContent as { status: string; userAction: { url: string } }).userAction;
      expect((result.structuredContent as { status: string }).status).toBe("needs_user");
      const html = (result._meta as Record<string, { html: string }>)[VIEW_META_KEY]!.html;
      expect(html).toContain("<h1>Waiting for your answer</h1>");
      expect(html).toContain(`href="${action.url}"`);
      // The model's text tells it to give the link; the view does not speak to the AI.
      expect(textOf(result)).toContain("give them this link");
      expect(html).not.toContain("give them");
    });

    test("the view-only tool follows an app's log through the service's owner check", async () => {
      const { address } = await callOk<{ address: string }>(views2025, "publish", {
        name: "Logless",
        visibility: "private",
        files: [{ path: "index.html", content: page("Logless") }],
      });
      const start = await views2025.callTool({ name: "tool_logs_tail", arguments: { address } });
      expect(start.isError).toBeFalsy();
      const newest = (start.structuredContent as { newest: number }).newest;
      expect(newest).toBeGreaterThanOrEqual(0);
      const after = await views2025.callTool({ name: "tool_logs_tail", arguments: { address, after: newest } });
      expect(after.structuredContent).toMatchObject({ address, lines: [] });
      const bob = await userWithToken(hatch);
      const bobViews = await connect2025Views(hatch, bob.accessToken);
      try {
        const refused = await bobViews.callTool({ name: "tool_logs_tail", arguments: { address } });
        expect(refused.isError).toBe(true);
        expect(textOf(refused)).toContain("(not_found)");
        const bad = await bobViews.callTool({ name: "tool_logs_tail", arguments: { address, after: -1 } });
        expect(textOf(bad)).toContain("(invalid_input)");
      } finally {
        await bobViews.close();
      }
    });

    test("a connection whose URL leaves out the logs' group has neither the logs view's tool nor its view on tools", async () => {
      const billingOnly = await connect2025Views(hatch, alice.accessToken, "?features=billing");
      try {
        const tools = (await billingOnly.listTools()).tools as Listed[];
        expect(tools.map((t) => t.name)).not.toContain("tool_logs_tail");
        expect(tools.find((t) => t.name === "billing")?._meta?.ui?.resourceUri).toBe("ui://hatch/billing");
        await expect(
          billingOnly.callTool({ name: "tool_logs_tail", arguments: { address: "anything" } }),
        ).rejects.toThrow(/Unknown tool "tool_logs_tail"/);
      } finally {
        await billingOnly.close();
      }
    });

    test("2026-07-28: a request that declares the extension gets it in server/discover and views; one that does not, neither", async () => {
      const modern = await connect2026(hatch, alice.accessToken, true);
      const bare = await connect2026(hatch, alice.accessToken, false);
      try {
        const ui = "io.modelcontextprotocol/ui";
        expect(Object.keys(modern.getServerCapabilities()?.extensions ?? {})).toContain(ui);
        expect(Object.keys(bare.getServerCapabilities()?.extensions ?? {})).not.toContain(ui);
        const tools = (await modern.listTools()).tools as Listed[];
        expect(tools.find((t) => t.name === "tool_stats")?._meta?.ui?.resourceUri).toBe("ui://hatch/stats");
        expect(tools.find((t) => t.name === "tool_logs_tail")?._meta?.ui?.visibility).toEqual(["app"]);
        expect((await modern.listResources()).resources.map((r) => r.uri)).toEqual(VIEW_URIS);
        const billing = await modern.callTool({ name: "billing", arguments: {} });
        const html = (billing._meta as Record<string, { html: string }>)[VIEW_META_KEY]!.html;
        expect(html).toContain('data-usage="storage"');
        expect(html).toContain("Free");

        const bareTools = (await bare.listTools()).tools as Listed[];
        expect(bareTools.map((t) => t.name)).toEqual(TOOL_CONTRACTS.map((c) => c.name));
        expect(bareTools.filter((t) => t._meta?.ui)).toEqual([]);
        expect((await bare.listResources()).resources).toEqual([]);
        const bareBilling = await bare.callTool({ name: "billing", arguments: {} });
        expect(bareBilling._meta?.[VIEW_META_KEY]).toBeUndefined();
      } finally {
        await modern.close();
        await bare.close();
      }
    });
  });
}
