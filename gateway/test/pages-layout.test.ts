import { describe, expect, test } from "bun:test";
import { editorConfigs, renderInstallPage } from "../src/pages/install.ts";
import { html, htmlResponse, labelTableCells, renderPage } from "../src/pages/layout.ts";

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
