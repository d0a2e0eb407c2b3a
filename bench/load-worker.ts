// One load-generating process: `bun bench/load-worker.ts '<WorkerConfig JSON>'`. Opens its clients (each its own
// SDK Client and transport), prints `BENCH_CONNECTED {}`, waits for `GO <epoch ms>` on stdin, then calls whoami in a
// loop per client until the window closes and prints `BENCH_RESULT {…}`. Era 2025: the SDK v1 client, 2025-11-25,
// each client its own MCP session. Era 2026: the SDK v2 client pinned to 2026-07-28, stateless (server/discover once,
// then every call carries its version and capabilities; no session).
import { Client as Client2026, StreamableHTTPClientTransport as Transport2026 } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { MARKER } from "./children.ts";
import { driveTimed, readGo, type WorkerResult } from "./worker-loop.ts";

export type { WorkerResult };

export type Era = "2025" | "2026";

export interface WorkerConfig {
  mcpUrl: string;
  /** Which protocol era the clients speak (default 2025). */
  era?: Era;
  token?: string;
  clients: number;
  warmupMs: number;
  durationMs: number;
}

const config = JSON.parse(process.argv[2] ?? "{}") as WorkerConfig;

const result: WorkerResult = { latencies: [], errors: 0, warmupCalls: 0, answers: { json: 0, sse: 0 } };

/** fetch that notes the answer format of each POST (a server may stream the answer as SSE or send plain JSON). */
const observingFetch = async (input: string | URL, init?: RequestInit): Promise<Response> => {
  const response = await fetch(input, init);
  if (init?.method === "POST" && response.ok) {
    const type = response.headers.get("content-type") ?? "";
    if (type.startsWith("text/event-stream")) result.answers.sse++;
    else if (type.startsWith("application/json")) result.answers.json++;
  }
  return response;
};

/** What the loop needs of either era's client. */
interface BenchClient {
  callTool(params: {
    name: string;
    arguments: Record<string, unknown>;
  }): Promise<{ isError?: boolean; content?: unknown }>;
  close(): Promise<void>;
}

async function connect(index: number): Promise<BenchClient> {
  const headers: Record<string, string> = config.token ? { Authorization: `Bearer ${config.token}` } : {};
  const info = { name: "hatch-bench", version: "1.0.0" };
  try {
    if (config.era === "2026") {
      const client = new Client2026(info, { versionNegotiation: { mode: { pin: "2026-07-28" } }, capabilities: {} });
      await client.connect(
        new Transport2026(new URL(config.mcpUrl), {
          requestInit: { headers },
          fetch: Object.assign(observingFetch, { preconnect: fetch.preconnect }),
        }),
      );
      return client as BenchClient;
    }
    const client = new Client(info, { capabilities: {} });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(config.mcpUrl), { requestInit: { headers }, fetch: observingFetch }),
    );
    return client as BenchClient;
  } catch (error) {
    throw new Error(`client ${index} could not connect: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** One client's loop: whoami, again and again. */
function drive(client: BenchClient, measureFrom: number, measureUntil: number, out: WorkerResult): Promise<void> {
  const whoami = async () => {
    const result = await client.callTool({ name: "whoami", arguments: {} });
    return result.isError ? JSON.stringify(result.content).slice(0, 300) : undefined;
  };
  return driveTimed(whoami, measureFrom, measureUntil, out);
}

const clients = await Promise.all(Array.from({ length: config.clients }, (_, i) => connect(i)));
process.stdout.write(`${MARKER}CONNECTED {}\n`);
const startAt = await readGo();
// Wall clock is shared between processes; the performance clock is not. Convert once.
const begin = performance.now() + (startAt - Date.now());
const measureFrom = begin + config.warmupMs;
const measureUntil = measureFrom + config.durationMs;
await Bun.sleep(Math.max(0, begin - performance.now()));

await Promise.all(clients.map((client) => drive(client, measureFrom, measureUntil, result)));
// Handed to the OS before exiting: process.exit does not wait for a pipe write still queued (the line holds every
// latency of the window; a cut one read as "exited before RESULT").
await new Promise<void>((resolve) =>
  process.stdout.write(`${MARKER}RESULT ${JSON.stringify(result)}\n`, () => resolve()),
);
await Promise.all(clients.map((client) => client.close().catch(() => {})));
process.exit(0);
