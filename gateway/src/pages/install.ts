import { ALWAYS_OFFERED, parseFeatures, TOOL_GROUP_NAMES, TOOL_GROUPS, type ToolGroup } from "@hatch/contracts";
import { copyable, html, renderPage } from "./layout.ts";

/** What each tool group is for, on the install page's checkboxes. */
const GROUP_LABELS: Record<ToolGroup, string> = {
  apps: "Apps: publish, share, versions, delete, statistics",
  data: "Data: what apps store, server logs",
  runtime: "Runtime: API secrets and AI keys",
  domains: "Domains: custom domains, company address, buying a domain",
  billing: "Billing: plan, usage, payment links",
  orgs: "Organizations: members, invitations, pausing apps, activity log",
};

/** The MCP URL a person chose on the install page: tool groups (all when none or every one is ticked) and read-only. */
export function connectionUrl(mcpUrl: string, query: URLSearchParams): string {
  const parsed = parseFeatures(query.getAll("features"));
  const groups =
    "groups" in parsed && parsed.groups && parsed.groups.length < TOOL_GROUP_NAMES.length ? parsed.groups : null;
  const params = new URLSearchParams();
  if (groups && groups.length > 0) params.set("features", groups.join(","));
  if (query.get("read_only") === "true") params.set("read_only", "true");
  const search = params.toString().replaceAll("%2C", ",");
  return search ? `${mcpUrl}?${search}` : mcpUrl;
}

/** One name everywhere a client shows the server: both deep links and the key of both JSON files. */
const SERVER_NAME = "Hatch";
const SERVER_KEY = "hatch";

/** The Cursor and VS Code project files that add Hatch, as pretty JSON: `.cursor/mcp.json`, `.vscode/mcp.json`. */
export function editorConfigs(url: string): { cursor: string; vscode: string } {
  return {
    cursor: JSON.stringify({ mcpServers: { [SERVER_KEY]: { url } } }, null, 2),
    vscode: JSON.stringify({ servers: { [SERVER_KEY]: { type: "http", url } } }, null, 2),
  };
}

/**
 * `GET /mcp` in a browser: one-click buttons for the two code editors, their JSON files, and steps for the chat
 * clients. Its form (a plain GET, no script) narrows the URL to some tool groups or to reading only; every link,
 * command and snippet carries it.
 */
export function renderInstallPage(mcpUrl: string, query: URLSearchParams = new URLSearchParams()): string {
  const url = connectionUrl(mcpUrl, query);
  const chosen = new URL(url).searchParams;
  const picked = new Set((chosen.get("features") ?? "").split(",").filter(Boolean));
  const cursor = `cursor://anysphere.cursor-deeplink/mcp/install?name=${SERVER_NAME}&config=${encodeURIComponent(Buffer.from(JSON.stringify({ url })).toString("base64"))}`;
  const vscode = `vscode:mcp/install?${encodeURIComponent(JSON.stringify({ name: SERVER_NAME, type: "http", url }))}`;
  const files = editorConfigs(url);
  const boxes = TOOL_GROUP_NAMES.map(
    (group) =>
      html`<label class="choice"><input type="checkbox" name="features" value="${group}"${picked.size === 0 || picked.has(group) ? " checked" : ""}> <span>${GROUP_LABELS[group]} <span class="muted">(${TOOL_GROUPS[group].length} tools)</span></span></label>`,
  );
  return renderPage({
    title: "Connect your AI",
    body: html`<h1>Connect your AI to Hatch</h1>
<p>This is Hatch's MCP server: ${copyable(url, "the MCP server URL")}</p>
<p>Add it once; the first time your AI uses it, a browser window opens so you can sign in and approve it. No API
key is needed.</p>
<div class="actions"><a class="button" href="${cursor}">Add to Cursor</a>
<a class="button" href="${vscode}">Add to VS Code</a></div>
<div class="card"><h2>Cursor</h2><p>Or add this to <code>.cursor/mcp.json</code> in your project (or
<code>~/.cursor/mcp.json</code> for every project):</p><pre data-copy-label="the Cursor configuration"><code>${files.cursor}</code></pre></div>
<div class="card"><h2>VS Code</h2><p>Or add this to <code>.vscode/mcp.json</code> in your project:</p>
<pre data-copy-label="the VS Code configuration"><code>${files.vscode}</code></pre></div>
<div class="card"><h2>Claude</h2><p>Settings → Connectors → Add custom connector, and paste the URL above.</p>
<p>Claude Code:</p><pre data-copy-label="the Claude Code command"><code>claude mcp add --transport http ${SERVER_KEY} ${url}</code></pre></div>
<div class="card"><h2>ChatGPT</h2><p>Settings → Apps &amp; Connectors → Advanced → Developer mode, then Create,
and paste the URL above.</p></div>
<div class="card"><h2>Only some tools</h2><p>Fewer tools leave your AI more room. ${ALWAYS_OFFERED.join(" and ")} are always there.</p>
<form method="get" action="/mcp"><fieldset><legend>Tool groups</legend>${boxes}</fieldset>
<label class="choice"><input type="checkbox" name="read_only" value="true"${chosen.get("read_only") === "true" ? " checked" : ""}> <span>Read only: the AI can look but not change anything</span></label>
<div class="actions"><button type="submit">Update the URL above</button></div></form></div>
<div class="card"><h2>Project rules</h2><p>Add <a href="/mcp/rules">the publishing rules</a> to your project's agent
instructions, or get them for <a href="/mcp/rules?for=cursor">Cursor</a>, <a href="/mcp/rules?for=windsurf">Windsurf</a>,
<a href="/mcp/rules?for=claude">Claude Code</a> or <a href="/mcp/rules?for=copilot">GitHub Copilot</a>.
The <a href="/mcp/docs">developer reference</a> is what your AI reads before it builds.</p></div>`,
  });
}

const RULES = `# Publishing with Hatch

- This project is published with Hatch through its MCP tools. Use the tools; never ask the user for a
  Hatch API key (there is none).
- Before building for Hatch, call \`service_docs\` and follow it: build a static folder with \`index.html\` at
  its root; put server settings in \`service.json\`.
- Publish the built folder with \`publish\`. The first publish asks the user for the app's name and who can
  see it; later publishes create new versions of the same app (pass its address).
- Never put secret values, API keys or AI provider keys in code, files or tool arguments. Use \`tool_secret\`
  and \`ai_key\`: they return a link where the user enters the value.
- If something goes wrong after a publish, \`rollback\` makes an earlier version current again.
`;

const RULE_FORMATS: Record<string, { file: string; wrap: (rules: string) => string }> = {
  cursor: {
    file: ".cursor/rules/hatch.mdc",
    wrap: (r) => `---\ndescription: Publishing this project with Hatch\nalwaysApply: true\n---\n\n${r}`,
  },
  windsurf: { file: ".windsurf/rules/hatch.md", wrap: (r) => `---\ntrigger: always_on\n---\n\n${r}` },
  claude: { file: "CLAUDE.md", wrap: (r) => r },
  copilot: { file: ".github/copilot-instructions.md", wrap: (r) => r },
  agents: { file: "AGENTS.md", wrap: (r) => r },
};

export const RULE_CLIENTS = Object.keys(RULE_FORMATS);

/** `GET /mcp/rules[?for=<client>]`: the rules as text, or in one editor's always-on rule format. */
export function rulesResponse(forClient: string | null): Response {
  const headers = { "Content-Type": "text/markdown; charset=utf-8", "Cache-Control": "public, max-age=300" };
  if (!forClient) return new Response(RULES, { headers });
  const format = RULE_FORMATS[forClient];
  if (!format) {
    return new Response(`Unknown client "${forClient}". Use one of: ${RULE_CLIENTS.join(", ")}.\n`, {
      status: 400,
      headers: { "Content-Type": "text/plain; charset=utf-8" },
    });
  }
  return new Response(format.wrap(RULES), {
    headers: {
      ...headers,
      "Content-Disposition": `inline; filename="${format.file.split("/").pop()}"`,
      "X-Hatch-Rules-Path": format.file,
    },
  });
}
