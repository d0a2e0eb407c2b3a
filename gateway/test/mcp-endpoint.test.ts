import { expect, test } from "bun:test";
import { createLogger, createMemoryBus } from "@hatch/platform";
import { gatewayConfig } from "../src/config.ts";
import { createMcpEndpoint, type McpEndpointDeps } from "../src/mcp/endpoint.ts";

// The MCP endpoint when the token check cannot run (its database is down): a JSON answer an MCP client can act on,
// with Retry-After, never a web framework's HTML error page.
test("a token check that fails answers JSON 503 with Retry-After", async () => {
  const config = gatewayConfig({ secret: "s".repeat(48), port: 3999 });
  const endpoint = createMcpEndpoint({
    config,
    auth: {
      authenticate: async () => {
        throw new Error("connect ECONNREFUSED 127.0.0.1:5432");
      },
    },
    version: "test",
    logger: createLogger({ level: "error" }),
    bus: createMemoryBus(),
    contextKey: Buffer.alloc(32),
    accounts: {} as McpEndpointDeps["accounts"],
    confirmations: {} as McpEndpointDeps["confirmations"],
  });
  const response = await endpoint.handle(
    new Request(config.mcpUrl, {
      method: "POST",
      headers: { Authorization: "Bearer x", "Content-Type": "application/json", Host: new URL(config.mcpUrl).host },
      body: "{}",
    }),
  );
  expect(response.status).toBe(503);
  expect(response.headers.get("retry-after")).toBe("5");
  const body = (await response.json()) as { error: { message: string } };
  expect(body.error.message).toContain("Try again in a few seconds");
  expect(JSON.stringify(body)).not.toContain("ECONNREFUSED");
  await endpoint.close();
});
