// One load-generating process: `bun bench/load-worker.ts '<WorkerConfig JSON>'`. Opens its clients (each its own
// SDK Client and transport, so its own MCP session), prints `BENCH_CONNECTED {}`, waits for `GO <epoch ms>` on
// stdin, then calls whoami in a loop per client until the window closes and prints `BENCH_RESULT {…}`.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { MARKER } from "./children.ts";
import { driveTimed, readGo } from "./worker-loop.ts";

export interface WorkerConfig {
  mcpUrl: string;
  token?: string;
  clients: number;
  warmupMs: number;
  durationMs: number;
}

export interface WorkerResult {
  /** Latency in ms of every call that completed inside the measured window. */
  latencies: number[];
  errors: number;
  firstError?: string;
  /** Calls made during the warmup (not counted). */
  warmupCalls: number;
  /** How the server answered the POSTs: plain JSON or an SSE stream. */
  answers: { json: number; sse: number };
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

async function connect(index: number): Promise<Client> {
  const client = new Client({ name: "hatch-bench", version: "1.0.0" }, { capabilities: {} });
  const headers: Record<string, string> = config.token ? { Authorization: `Bearer ${config.token}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(config.mcpUrl), {
    requestInit: { headers },
    fetch: observingFetch,
  });
  try {
    await client.connect(transport);
  } catch (error) {
    throw new Error(`client ${index} could not connect: ${error instanceof Error ? error.message : String(error)}`);
  }
  return client;
}

/** One client's loop: whoami, again and again. */
function drive(client: Client, measureFrom: number, measureUntil: number, out: WorkerResult): Promise<void> {
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
process.stdout.write(`${MARKER}RESULT ${JSON.stringify(result)}\n`);
await Promise.all(clients.map((client) => client.close().catch(() => {})));
process.exit(0);
