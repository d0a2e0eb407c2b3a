// (a) The baseline: the smallest honest MCP server in front of the same whoami handler. One process, stateful
// sessions over the SDK's web-standard streamable HTTP transport under Bun.serve, no auth, no gateway, no bus.
// It talks to a real Postgres (DATABASE_URL) so that, against (c), the difference is the gateway and the bus.
// Prints `BENCH_READY {"mcpUrl": …}` on stdout once it answers.
import { createLogger, openServiceDatabase } from "@hatch/platform";
import { randomId, whoami, type CallContext } from "@hatch/contracts";
import { ORGS_MIGRATIONS } from "@hatch/orgs";
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
import { whoamiTool } from "../services/orgs/src/tools/whoami.ts";
import { MARKER } from "./children.ts";

const databaseUrl = process.env.DATABASE_URL;
const port = Number(process.env.PORT);
if (!databaseUrl || !Number.isInteger(port) || port <= 0) {
  process.stderr.write("baseline-server: DATABASE_URL and PORT are required\n");
  process.exit(2);
}
// The same pool size the orgs service gets by default when it runs alone (DB_POOL_SIZE), so (a) and (c) compare fairly.
const poolSize = Number(process.env.DB_POOL_SIZE ?? 10);
// Answer tool calls as plain JSON or as an SSE stream (the SDK's default): the bench picks what the gateway did
// for the same client, so the answer format is not part of the difference.
const jsonAnswers = process.env.BENCH_ANSWER === "json";

const database = await openServiceDatabase(
  { kind: "postgres", url: databaseUrl, maxConnections: poolSize },
  { schema: "orgs", migrationsFolder: ORGS_MIGRATIONS },
);
const tool = whoamiTool(database.db);
const log = createLogger({ level: "warn", fields: { service: "baseline" } });

/** The caller this server pretends every request comes from: there is no auth here. */
function benchContext(rid: string): CallContext {
  const iat = Math.floor(Date.now() / 1000);
  return {
    v: 1,
    sub: "usr_bench_baseline",
    email: "baseline@bench.example",
    name: "Baseline Bench",
    permissions: [],
    scope: "read",
    client: { kind: "other", name: "bench", elicitation: { form: false, url: false } },
    grant: "bench",
    rid,
    iat,
    exp: iat + 120,
  };
}

function createServer(): Server {
  const server = new Server(
    { name: "hatch-baseline", version: "0.0.0" },
    { capabilities: { tools: { listChanged: false } } },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      {
        name: whoami.name,
        description: whoami.description,
        inputSchema: { type: "object", properties: {}, additionalProperties: false },
      },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    if (request.params.name !== whoami.name)
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool "${request.params.name}".`);
    // The same checks the orgs service makes around its handler: input against the contract, output too.
    const input = whoami.input.safeParse(request.params.arguments ?? {});
    if (!input.success) return { isError: true, content: [{ type: "text", text: "Invalid arguments for whoami." }] };
    const requestId = randomId(12);
    const outcome = await tool.handler({ ctx: benchContext(requestId), input: input.data, requestId, log });
    if ("ask" in outcome) throw new McpError(ErrorCode.InternalError, "whoami never asks");
    const data = whoami.output.parse(outcome.data);
    return { content: [{ type: "text", text: outcome.text }], structuredContent: data };
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
      enableJsonResponse: jsonAnswers,
      onsessioninitialized: (id) => void sessions.set(id, fresh),
      onsessionclosed: (id) => void sessions.delete(id),
    });
    await createServer().connect(fresh);
    transport = fresh;
  }
  return transport.handleRequest(request, { parsedBody: body });
}

const server = Bun.serve({
  port,
  hostname: "127.0.0.1",
  // SSE streams (the GET stream each client opens) must outlive Bun's default 10 s idle timeout.
  idleTimeout: 0,
  fetch: (request) =>
    new URL(request.url).pathname === "/mcp" ? handle(request) : new Response("not found", { status: 404 }),
});
process.stdout.write(
  `${MARKER}READY ${JSON.stringify({ mcpUrl: `http://127.0.0.1:${server.port}/mcp`, poolSize, answer: jsonAnswers ? "json" : "sse" })}\n`,
);

const stop = async () => {
  await server.stop(true);
  await Promise.all([...sessions.values()].map((t) => t.close().catch(() => {})));
  await database.close();
  process.exit(0);
};
process.once("SIGTERM", () => void stop());
process.once("SIGINT", () => void stop());
