// (a) The 2026 baseline: the smallest honest 2026-07-28 MCP server in front of the same whoami handler. One process,
// the SDK v2 stateless handler (`createMcpHandler`: a fresh low-level Server per request, as the gateway serves 2026)
// under Bun.serve, no auth, no gateway, no bus, on the real Postgres (DATABASE_URL), so that against (c) 2026, driven
// by the same 2026 client, the difference is the gateway and the bus. Prints `BENCH_READY {"mcpUrl": …}` on stdout
// once it answers.
import { createMcpHandler, ProtocolError, ProtocolErrorCode, Server } from "@modelcontextprotocol/server";
import { baselineSettings, openWhoami, serveBaseline } from "./baseline-whoami.ts";

const settings = baselineSettings("baseline-server-2026");
const whoami = await openWhoami(settings);

function createServer(): Server {
  const server = new Server(
    { name: "hatch-baseline", version: "0.0.0" },
    { capabilities: { tools: { listChanged: false } } },
  );
  server.setRequestHandler("tools/list", async () => ({ tools: [whoami.listed] }));
  server.setRequestHandler("tools/call", async (request) => {
    if (request.params.name !== whoami.listed.name)
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool "${request.params.name}".`);
    return whoami.call(request.params.arguments);
  });
  return server;
}

// 2026-07-28 only, as the gateway's handler for this era (`legacy: "reject"`); `responseMode` answers every tool call
// as the gateway answered the same client (its own `auto` answers a whoami as plain JSON).
const handler = createMcpHandler(() => createServer(), { legacy: "reject", responseMode: settings.answer });

serveBaseline(settings, whoami, (request) => handler.fetch(request), handler.close);
