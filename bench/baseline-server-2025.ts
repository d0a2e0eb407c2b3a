// (a) The 2025 baseline: the smallest honest 2025-11-25 MCP server in front of the same whoami handler. One process,
// stateful sessions over the SDK v1 web-standard streamable HTTP transport under Bun.serve, no auth, no gateway, no
// bus. It talks to a real Postgres (DATABASE_URL) so that, against (c) 2025, the difference is the gateway and the bus.
// Prints `BENCH_READY {"mcpUrl": …}` on stdout once it answers.
import { randomId } from "@hatch/contracts";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  isInitializeRequest,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
} from "@modelcontextprotocol/sdk/types.js";
import { baselineSettings, openWhoami, serveBaseline } from "./baseline-whoami.ts";

const settings = baselineSettings("baseline-server-2025");
const whoami = await openWhoami(settings);

function createServer(): Server {
  const server = new Server(
    { name: "hatch-baseline", version: "0.0.0" },
    { capabilities: { tools: { listChanged: false } } },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [whoami.listed] }));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    if (request.params.name !== whoami.listed.name)
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool "${request.params.name}".`);
    return whoami.call(request.params.arguments);
  });
  return server;
}

const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();

async function handle(request: Request): Promise<Response> {
  const body: unknown = request.method === "POST" ? await request.json().catch(() => undefined) : undefined;
  const sessionId = request.headers.get("mcp-session-id");
  let transport = sessionId ? sessions.get(sessionId) : undefined;
  if (sessionId && !transport)
    return Response.json(
      { jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null },
      { status: 404 },
    );
  if (!transport) {
    if (!isInitializeRequest(body))
      return Response.json(
        { jsonrpc: "2.0", error: { code: -32000, message: "Send initialize first" }, id: null },
        { status: 400 },
      );
    const fresh = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomId(24),
      enableJsonResponse: settings.answer === "json",
      onsessioninitialized: (id) => void sessions.set(id, fresh),
      onsessionclosed: (id) => void sessions.delete(id),
    });
    await createServer().connect(fresh);
    transport = fresh;
  }
  return transport.handleRequest(request, { parsedBody: body });
}

serveBaseline(settings, whoami, handle, async () => {
  await Promise.all([...sessions.values()].map((t) => t.close().catch(() => {})));
});
