import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { userWithToken } from "./support/mcp.ts";
import { lintToolSchemas } from "./support/pages-schema-lint.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

// Strict clients (the MCP Inspector's --strict, clients that map schemas onto a single-type dialect) take every tool:
// tools/list carries input schemas only, each free of the forms they warn about. `bun scripts/inspector-strict.ts`
// runs the Inspector itself against an embedded Hatch.

test("the schema rules catch what the Inspector's strict mode reports", () => {
  const findings = lintToolSchemas([
    {
      name: "bad",
      inputSchema: {
        type: "object",
        properties: {
          nullable: { type: ["string", "null"] },
          anything: {},
          remote: { $ref: "https://schemas.example/x.json" },
          never: false,
          list: { type: "array", items: { anyOf: [{ type: "string" }, true] } },
        },
        additionalProperties: false,
      },
      outputSchema: { type: "object" },
    },
    {
      name: "good",
      inputSchema: { type: "object", properties: { n: { anyOf: [{ type: "string" }, { type: "null" }] } } },
    },
  ]);
  expect(findings).toEqual([
    { tool: "bad", schema: "inputSchema", path: "$.properties.nullable", rule: "type-union" },
    { tool: "bad", schema: "inputSchema", path: "$.properties.anything", rule: "untyped-schema" },
    { tool: "bad", schema: "inputSchema", path: "$.properties.remote", rule: "remote-ref" },
    { tool: "bad", schema: "inputSchema", path: "$.properties.never", rule: "boolean-schema" },
    { tool: "bad", schema: "inputSchema", path: "$.properties.list.items.anyOf[1]", rule: "boolean-schema" },
  ]);
});

for (const mode of EMBEDDED_MODES) {
  describe(`tools/list for strict clients (${mode})`, () => {
    let hatch: TestHatch;
    let token = "";

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      token = (await userWithToken(hatch)).accessToken;
    }, 60_000);
    afterAll(async () => {
      await hatch?.stop();
    });

    async function listTools(query: string) {
      const client = new Client({ name: "mcp-inspector", version: "2.12.0" }, { capabilities: {} });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${hatch.mcpUrl}${query}`), {
          requestInit: { headers: { Authorization: `Bearer ${token}` } },
        }),
      );
      const { tools } = await client.listTools();
      await client.close();
      return tools;
    }

    test("service_docs names this deployment's app addresses, as /mcp/docs does", async () => {
      const client = new Client({ name: "claude-code", version: "2.0.0" }, { capabilities: {} });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(hatch.mcpUrl), {
          requestInit: { headers: { Authorization: `Bearer ${token}` } },
        }),
      );
      const result = await client.callTool({ name: "service_docs", arguments: {} });
      await client.close();
      const text = (result.content as { type: string; text?: string }[]).map((c) => c.text ?? "").join("\n");
      const host = new URL(hatch.appHostUrl);
      const example = `${host.protocol}//my-todo.${host.host}`;
      expect(text).toContain(example);
      const page = await (await fetch(`${hatch.baseUrl}/mcp/docs.md`)).text();
      expect(page).toContain(example);
    });

    for (const query of ["", "?read_only=true", "?features=apps,data"]) {
      test(`no output schemas and no portability findings${query ? ` (${query})` : ""}`, async () => {
        const tools = await listTools(query);
        expect(tools.length).toBeGreaterThan(query ? 2 : 28);
        expect(tools.filter((t) => t.outputSchema !== undefined).map((t) => t.name)).toEqual([]);
        expect(lintToolSchemas(tools)).toEqual([]);
        // Every input is an object schema with its properties typed (the form every client maps).
        for (const tool of tools) expect(tool.inputSchema.type).toBe("object");
      });
    }
  });
}
