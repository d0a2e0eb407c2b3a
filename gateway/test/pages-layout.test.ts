import { describe, expect, test } from "bun:test";
import { loadGatewayConfig } from "../src/config.ts";
import { docsResponse } from "../src/pages/docs.ts";
import { editorConfigs, renderInstallPage } from "../src/pages/install.ts";
import { html, htmlResponse, labelTableCells, renderPage } from "../src/pages/layout.ts";

const SECRET = "s".repeat(40);

describe("the layout", () => {
  test("the one inline script is the one the CSP allows by hash; nothing breaks words anywhere", async () => {
    const page = renderPage({ title: "Tokens", body: html`<p>x</p>` });
    const response = htmlResponse(page);
    const csp = response.headers.get("content-security-policy")!;
    const scripts = [...page.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]!);
    expect(scripts).toHaveLength(1);
    const hash = new Bun.CryptoHasher("sha256").update(scripts[0]!).digest("base64");
    expect(csp).toContain(`script-src 'sha256-${hash}';`);
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain("unsafe-inline' 'sha");
    expect(page).not.toContain("break-all");
    expect(page).toContain("overflow-wrap:anywhere");
  });

  test("the home page is titled Hatch once; other pages name themselves first", () => {
    expect(renderPage({ title: "Hatch", body: html`` })).toContain("<title>Hatch</title>");
    expect(renderPage({ title: "Sign in", body: html`` })).toContain("<title>Sign in · Hatch</title>");
  });

  test("table cells are labelled by their column for the narrow layout; rows without a header stay as they are", () => {
    const table = `<table><thead><tr><th>Client</th><th>Access &amp; scope</th><th></th></tr></thead><tbody><tr><td>A</td><td>Full</td><td><button>Revoke</button></td></tr></tbody></table>`;
    expect(labelTableCells(table)).toContain(
      `<tr><td data-label="Client">A</td><td data-label="Access &amp; scope">Full</td><td><button>Revoke</button></td></tr>`,
    );
    const headless = "<table><tr><td>a</td></tr></table>";
    expect(labelTableCells(headless)).toBe(headless);
    // Labels already written by a page are kept.
    const given = `<table><thead><tr><th>X</th></tr></thead><tbody><tr><td data-label="Own">1</td></tr></tbody></table>`;
    expect(labelTableCells(given)).toBe(given);
  });
});

describe("the install page", () => {
  test("Cursor and VS Code files for the chosen URL, one name in both deep links, no button inside a link", () => {
    const url = "https://hatch.example/mcp?features=apps&read_only=true";
    expect(JSON.parse(editorConfigs(url).cursor)).toEqual({ mcpServers: { hatch: { url } } });
    expect(JSON.parse(editorConfigs(url).vscode)).toEqual({ servers: { hatch: { type: "http", url } } });
    const page = renderInstallPage("https://hatch.example/mcp", new URLSearchParams("features=apps&read_only=true"));
    expect(page).toContain("name=Hatch&amp;config=");
    expect(page).toContain(encodeURIComponent('"name":"Hatch"'));
    expect(page).toContain("&quot;mcpServers&quot;");
    expect(page).toContain("&quot;servers&quot;");
    expect(page).not.toMatch(/<a\b[^>]*>(?:(?!<\/a>)[\s\S])*<button/);
  });
});

describe("the developer reference page", () => {
  const get = (path: string, appsOrigin: string | null) =>
    docsResponse(new Request(`http://localhost${path}`, { headers: { accept: "text/html" } }), false, { appsOrigin });

  test("names app addresses under the configured apps origin, with a contents list of its sections", async () => {
    const page = await get("/mcp/docs", "https://apps.example.net").text();
    expect(page).toContain("https://my-todo.apps.example.net");
    expect(page).not.toContain("localhost:3001");
    const ids = new Set([...page.matchAll(/<h2 id="([^"]+)"/g)].map((m) => m[1]));
    const links = [...page.matchAll(/<li><a href="#([^"]+)">/g)].map((m) => m[1]);
    expect(links.length).toBeGreaterThan(5);
    for (const link of links) expect(ids.has(link)).toBe(true);
    expect(page.match(/<h1[ >]/g)).toHaveLength(1);
  });

  test("without a configured apps origin it says <apps domain>; Markdown too", async () => {
    expect(await get("/mcp/docs", null).text()).toContain("https://my-todo.&lt;apps domain&gt;");
    const markdown = await docsResponse(new Request("http://localhost/mcp/docs.md"), true, {
      appsOrigin: "http://localhost:3401",
    }).text();
    expect(markdown).toContain("`http://my-todo.localhost:3401`");
  });

  test("one topic has a heading of its own", async () => {
    const page = await get("/mcp/docs?topic=plans", null).text();
    expect(page).toContain("<h1>Developer reference</h1>");
  });
});

describe("the gateway's apps origin setting", () => {
  test("APPS_DOMAIN and APPS_PROTOCOL as the apps service reads them; none leaves it to the embedded app host", () => {
    expect(loadGatewayConfig({ HATCH_SECRET: SECRET, APPS_DOMAIN: "apps.example.net" }).appsUrl).toBe(
      "https://apps.example.net",
    );
    expect(
      loadGatewayConfig({ HATCH_SECRET: SECRET, APPS_DOMAIN: "apps.localhost:8080", APPS_PROTOCOL: "http" }).appsUrl,
    ).toBe("http://apps.localhost:8080");
    expect(loadGatewayConfig({ HATCH_SECRET: SECRET }).appsUrl).toBeNull();
    expect(() => loadGatewayConfig({ HATCH_SECRET: SECRET, APPS_DOMAIN: "https://apps.example.net" })).toThrow(
      "APPS_DOMAIN",
    );
  });
});
