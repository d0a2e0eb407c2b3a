import { ALWAYS_OFFERED, parseFeatures, TOOL_GROUP_NAMES, TOOL_GROUPS, type ToolGroup } from "@hatch/shared";
import { html, renderPage } from "./layout.ts";

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

/**
 * `GET /mcp` in a browser: one-click buttons for the two code editors, and steps for the chat clients. Its form (a
 * plain GET, no script) narrows the URL to some tool groups or to reading only; every link and command carries it.
 */
export function renderInstallPage(mcpUrl: string, query: URLSearchParams = new URLSearchParams()): string {
  const url = connectionUrl(mcpUrl, query);
  const chosen = new URL(url).searchParams;
  const picked = new Set((chosen.get("features") ?? "").split(",").filter(Boolean));
  const cursor = `cursor://anysphere.cursor-deeplink/mcp/install?name=Hatch&config=${encodeURIComponent(Buffer.from(JSON.stringify({ url })).toString("base64"))}`;
  const vscode = `vscode:mcp/install?${encodeURIComponent(JSON.stringify({ name: "Hatch", type: "http", url }))}`;
  const boxes = TOOL_GROUP_NAMES.map(
    (group) =>
      html`<label><input type="checkbox" name="features" value="${group}"${picked.size === 0 || picked.has(group) ? " checked" : ""}> ${GROUP_LABELS[group]} <span class="muted">(${TOOL_GROUPS[group].length} tools)</span></label><br>`,
  );
  return renderPage({
    title: "Connect your AI",
    body: html`<h1>Connect your AI to Hatch</h1>
<p>This is Hatch's MCP server: <code>${url}</code>. Add it once; the first time your AI uses it, a browser
window opens so you can sign in and approve it. No API key is needed.</p>
<div class="actions"><a class="button" href="${cursor}">Add to Cursor</a>
<a class="button" href="${vscode}">Add to VS Code</a></div>
<div class="card"><h2>Claude</h2><p>Settings → Connectors → Add custom connector, paste <code>${url}</code>.
Claude Code: <code>claude mcp add --transport http hatch ${url}</code></p></div>
<div class="card"><h2>ChatGPT</h2><p>Settings → Apps &amp; Connectors → Advanced → Developer mode, then Create,
and paste <code>${url}</code>.</p></div>
<div class="card"><h2>Only some tools</h2><p>Fewer tools leave your AI more room. ${ALWAYS_OFFERED.join(" and ")} are always there.</p>
<form method="get" action="/mcp">${boxes}
<label><input type="checkbox" name="read_only" value="true"${chosen.get("read_only") === "true" ? " checked" : ""}> Read only: the AI can look but not change anything</label>
<div class="actions"><button type="submit">Update the URL above</button></div></form></div>
<div class="card"><h2>Project rules</h2><p>Add <a href="/mcp/rules">the publishing rules</a> to your project's agent
instructions, or get them for <a href="/mcp/rules?for=cursor">Cursor</a>, <a href="/mcp/rules?for=windsurf">Windsurf</a>,
<a href="/mcp/rules?for=claude">Claude Code</a> or <a href="/mcp/rules?for=copilot">GitHub Copilot</a>.</p></div>`,
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
