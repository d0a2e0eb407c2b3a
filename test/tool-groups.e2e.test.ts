import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CLIENT_KINDS, TOOL_CONTRACTS, TOOL_GROUP_NAMES, TOOL_GROUPS } from "@hatch/contracts";
import { TOOL_LIST_BUDGET_BYTES, toolsFor } from "../gateway/src/mcp/catalog.ts";
import { withViewTools } from "../gateway/src/mcp/views/index.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";
import { textOf, userWithToken } from "./support/mcp.ts";

// The tool list fits a small context, and a connection URL can narrow it to some tool groups or to reading only.

describe("the tool list budget", () => {
  test("all 29 tools fit in the budget for every kind of client, with views or without", () => {
    for (const kind of CLIENT_KINDS) {
      const tools = toolsFor({ kind, groups: null, readOnly: false });
      expect(JSON.stringify({ tools }).length).toBeLessThanOrEqual(TOOL_LIST_BUDGET_BYTES);
      // A client that shows views (MCP Apps) gets their URIs and the view-only tool in the same budget.
      expect(JSON.stringify({ tools: withViewTools(tools) }).length).toBeLessThanOrEqual(TOOL_LIST_BUDGET_BYTES);
    }
  });

  test("no repetition a model pays for: no output schemas, one title, no safe-integer bounds", () => {
    const json = JSON.stringify(toolsFor({ kind: "other", groups: null, readOnly: false }));
    expect(json).not.toContain("outputSchema");
    expect(json).not.toContain("9007199254740991");
    for (const tool of toolsFor({ kind: "other", groups: null, readOnly: false })) {
      expect(tool.title).toBeTruthy();
      expect(tool.annotations?.title).toBeUndefined();
    }
  });

  test("every tool is in exactly one group, or offered always", () => {
    const grouped = Object.values(TOOL_GROUPS).flat() as string[];
    expect(new Set(grouped).size).toBe(grouped.length);
    const rest = TOOL_CONTRACTS.map((c) => c.name).filter((n) => !grouped.includes(n));
    expect(rest.sort()).toEqual(["service_docs", "whoami"]);
  });
});

for (const mode of EMBEDDED_MODES) {
  describe(`tool groups in the connection URL (${mode})`, () => {
    let hatch: TestHatch;
    let token: string;
    const open: Client[] = [];

    async function connect(query: string): Promise<Client> {
      const client = new Client({ name: "claude-code", version: "2.0.0" }, { capabilities: {} });
      const transport = new StreamableHTTPClientTransport(new URL(`${hatch.mcpUrl}${query}`), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      });
      await client.connect(transport);
      open.push(client);
      return client;
    }

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      token = (await userWithToken(hatch)).accessToken;
    }, 60_000);
    afterAll(async () => {
      for (const client of open) await client.close().catch(() => {});
      await hatch?.stop();
    });

    test("features=apps,billing lists those groups and the tools every connection has", async () => {
      const client = await connect("?features=apps,billing");
      const names = (await client.listTools()).tools.map((t) => t.name).sort();
      expect(names).toEqual([...TOOL_GROUPS.apps, ...TOOL_GROUPS.billing, "service_docs", "whoami"].sort());
    });

    test("a tool outside the chosen groups says which group to add, and does nothing", async () => {
      const client = await connect("?features=apps");
      const result = await client.callTool({ name: "org_members", arguments: {} });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain('"org_members" is in the orgs tool group');
      expect(textOf(result)).toContain("/mcp?features=apps,orgs");
      const whoami = await client.callTool({ name: "whoami", arguments: {} });
      expect(whoami.isError).toBeFalsy();
    });

    test("an unknown group is refused when connecting, naming the groups there are", async () => {
      const response = await fetch(`${hatch.mcpUrl}?features=apps,nope`, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${token}`,
          "Content-Type": "application/json",
          Accept: "application/json, text/event-stream",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
        }),
      });
      expect(response.status).toBe(400);
      const body = (await response.json()) as { error: { message: string } };
      expect(body.error.message).toContain('Unknown tool group "nope"');
      for (const group of TOOL_GROUP_NAMES) expect(body.error.message).toContain(group);
      await expect(connect("?features=everything")).rejects.toThrow();
    });

    test("read_only=true lists only reading tools and refuses a change even on a full grant", async () => {
      const client = await connect("?read_only=true");
      const tools = (await client.listTools()).tools;
      expect(tools.length).toBeGreaterThan(5);
      expect(tools.every((t) => t.annotations?.readOnlyHint === true)).toBe(true);
      const result = await client.callTool({
        name: "publish",
        arguments: {
          name: "x",
          visibility: "private",
          files: [{ path: "index.html", content: "<p>x</p>", encoding: "utf8" }],
        },
      });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain("read_only=true");
      expect(textOf(result)).toContain("Nothing was changed");
      const listed = await client.callTool({ name: "list_tools", arguments: {} });
      expect(listed.isError).toBeFalsy();
    });

    test("a bad read_only value is refused when connecting", async () => {
      await expect(connect("?read_only=yes")).rejects.toThrow();
    });

    test("the install page builds the URL from its checkboxes into every link and command", async () => {
      const page = await fetch(`${hatch.mcpUrl}?features=apps&features=data&read_only=true`, {
        headers: { Accept: "text/html" },
      });
      expect(page.status).toBe(200);
      const body = await page.text();
      const chosen = `${hatch.mcpUrl}?features=apps,data&amp;read_only=true`;
      expect(body).toContain(`>${chosen}</code>`);
      expect(body).toContain(`claude mcp add --transport http hatch ${chosen}`);
      const vscode = /href="(vscode:mcp\/install\?[^"]+)"/.exec(body)![1]!;
      expect(
        JSON.parse(decodeURIComponent(vscode.replace("vscode:mcp/install?", "").replaceAll("&amp;", "&"))),
      ).toEqual({ name: "Hatch", type: "http", url: `${hatch.mcpUrl}?features=apps,data&read_only=true` });
      const cursor = /config=([^"&]+)/.exec(body)![1]!;
      expect(JSON.parse(Buffer.from(decodeURIComponent(cursor), "base64").toString())).toEqual({
        url: `${hatch.mcpUrl}?features=apps,data&read_only=true`,
      });
      expect(body).toMatch(/name="features" value="apps" checked/);
      expect(body).not.toMatch(/name="features" value="orgs" checked/);
      expect(body).not.toMatch(/<a[^>]*>\s*<button/);
      // Every group ticked is the plain URL.
      const all = await (
        await fetch(`${hatch.mcpUrl}?${TOOL_GROUP_NAMES.map((g) => `features=${g}`).join("&")}`, {
          headers: { Accept: "text/html" },
        })
      ).text();
      expect(all).toContain(`>${hatch.mcpUrl}</code>`);
    });
  });
}
