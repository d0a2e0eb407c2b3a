// What both eras' (a) baselines share (baseline-server-2025.ts, baseline-server-2026.ts): their settings, the orgs
// whoami handler on the real Postgres with the checks the orgs service makes around it, Bun.serve on /mcp, READY and a
// clean stop. Only the MCP server in front differs per era, so (a) 2025 against (a) 2026 is the SDKs and the protocol.
import { createLogger, openServiceDatabase } from "@hatch/platform";
import { randomId, whoami, type CallContext } from "@hatch/contracts";
import { ORGS_MIGRATIONS } from "@hatch/orgs";
import { whoamiTool } from "../services/orgs/src/tools/whoami.ts";
import { MARKER } from "./children.ts";

export interface BaselineSettings {
  databaseUrl: string;
  port: number;
  /** The same pool size the orgs service gets by default when it runs alone (DB_POOL_SIZE), so (a) and (c) compare fairly. */
  poolSize: number;
  /** Tool calls answered as plain JSON or as an SSE stream: the bench picks what the gateway did for the same client. */
  answer: "json" | "sse";
}

/** PORT, DATABASE_URL, DB_POOL_SIZE and BENCH_ANSWER, or exits 2 naming what is missing. */
export function baselineSettings(script: string): BaselineSettings {
  const databaseUrl = process.env.DATABASE_URL;
  const port = Number(process.env.PORT);
  const answer = process.env.BENCH_ANSWER;
  if (!databaseUrl || !Number.isInteger(port) || port <= 0 || (answer !== "json" && answer !== "sse")) {
    process.stderr.write(`${script}: DATABASE_URL, PORT and BENCH_ANSWER (json or sse) are required\n`);
    process.exit(2);
  }
  return { databaseUrl, port, poolSize: Number(process.env.DB_POOL_SIZE ?? 10), answer };
}

/** A tools/call result in the shape both SDKs' servers send. */
export interface WhoamiResult {
  [key: string]: unknown;
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

export interface WhoamiBaseline {
  /** whoami's entry for tools/list. */
  readonly listed: { name: string; description: string; inputSchema: { type: "object"; [key: string]: unknown } };
  call(args: unknown): Promise<WhoamiResult>;
  close(): Promise<void>;
}

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

/** The orgs schema migrated on the run's database, and the whoami handler on it. */
export async function openWhoami(settings: BaselineSettings): Promise<WhoamiBaseline> {
  const database = await openServiceDatabase(
    { kind: "postgres", url: settings.databaseUrl, maxConnections: settings.poolSize },
    { schema: "orgs", migrationsFolder: ORGS_MIGRATIONS },
  );
  const tool = whoamiTool(database.db);
  const log = createLogger({ level: "warn", fields: { service: "baseline" } });
  return {
    listed: {
      name: whoami.name,
      description: whoami.description,
      inputSchema: { type: "object", properties: {}, additionalProperties: false },
    },
    async call(args) {
      // The same checks the orgs service makes around its handler: input against the contract, output too.
      const input = whoami.input.safeParse(args ?? {});
      if (!input.success) return { isError: true, content: [{ type: "text", text: "Invalid arguments for whoami." }] };
      const requestId = randomId(12);
      const outcome = await tool.handler({ ctx: benchContext(requestId), input: input.data, requestId, log });
      if ("ask" in outcome) throw new Error("whoami never asks");
      const data = whoami.output.parse(outcome.data);
      return { content: [{ type: "text", text: outcome.text }], structuredContent: data };
    },
    close: () => database.close(),
  };
}

/**
 * Serves `handle` on /mcp, prints `BENCH_READY {"mcpUrl": …}` once it answers, and on SIGTERM / SIGINT stops the
 * server, then `closeServer` (the era's own sessions), then the database.
 */
export function serveBaseline(
  settings: BaselineSettings,
  whoamiBaseline: WhoamiBaseline,
  handle: (request: Request) => Promise<Response>,
  closeServer: () => Promise<void> = async () => {},
): void {
  const server = Bun.serve({
    port: settings.port,
    hostname: "127.0.0.1",
    // SSE streams (the GET stream each 2025 client opens) must outlive Bun's default 10 s idle timeout.
    idleTimeout: 0,
    fetch: (request) =>
      new URL(request.url).pathname === "/mcp" ? handle(request) : new Response("not found", { status: 404 }),
  });
  const ready = { mcpUrl: `http://127.0.0.1:${server.port}/mcp`, poolSize: settings.poolSize, answer: settings.answer };
  process.stdout.write(`${MARKER}READY ${JSON.stringify(ready)}\n`);
  const stop = async () => {
    await server.stop(true);
    await closeServer().catch(() => {});
    await whoamiBaseline.close();
    process.exit(0);
  };
  process.once("SIGTERM", () => void stop());
  process.once("SIGINT", () => void stop());
}
