import { join } from "node:path";
import { Child } from "./children.ts";
import { CpuMeter, type CpuGroup } from "./cpu.ts";
import type { HttpWorkerConfig } from "./http-load-worker.ts";
import type { Era, WorkerConfig, WorkerResult } from "./load-worker.ts";

export interface LoadOptions {
  mcpUrl: string;
  /** The MCP clients' protocol era (default 2025: SDK v1, sessions; 2026: SDK v2, stateless). */
  era?: Era;
  token?: string;
  /** Plain HTTP GETs instead of MCP calls: connect to `url`, send `host` as the Host header. */
  http?: { url: string; host: string; method?: string; json?: string };
  clients: number;
  /** Processes the clients are spread over; the load generator must not be what limits the result. */
  workers: number;
  warmupMs: number;
  durationMs: number;
  /** Processes whose CPU time to measure over the window; the load workers are added as "load". */
  cpuGroups?: CpuGroup[];
}

export interface RunStats {
  clients: number;
  workers: number;
  seconds: number;
  calls: number;
  callsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  maxMs: number;
  errors: number;
  firstError?: string;
  /** How the server answered tool calls: plain JSON, an SSE stream per call, or both. */
  answer: "json" | "sse" | "mixed" | "none";
  /** CPU seconds per process group during the measured window (Linux only). */
  cpuSeconds?: Record<string, number>;
}

const WORKER = join(import.meta.dir, "load-worker.ts");
const HTTP_WORKER = join(import.meta.dir, "http-load-worker.ts");

/** Runs `clients` concurrent MCP clients against one server for a fixed window and merges what they saw. */
export async function runLoad(options: LoadOptions): Promise<RunStats> {
  const workers = Math.max(1, Math.min(options.workers, options.clients));
  const children = Array.from({ length: workers }, (_, i) => {
    const common = {
      clients: share(options.clients, workers, i),
      warmupMs: options.warmupMs,
      durationMs: options.durationMs,
    };
    if (options.http) {
      const config: HttpWorkerConfig = { ...common, ...options.http };
      return new Child(`load-${i}`, [process.execPath, HTTP_WORKER, JSON.stringify(config)], { ...process.env });
    }
    const config: WorkerConfig = { ...common, mcpUrl: options.mcpUrl, token: options.token, era: options.era };
    return new Child(`load-${i}`, [process.execPath, WORKER, JSON.stringify(config)], { ...process.env });
  });
  try {
    await Promise.all(children.map((child) => child.waitFor("CONNECTED", 30_000)));
    // Every worker starts its warmup at the same wall-clock moment, a little after all are connected.
    const startAt = Date.now() + 100;
    for (const child of children) child.send(`GO ${startAt}`);
    const meter = new CpuMeter([
      { name: "load", roots: children.map((c) => c.proc.pid) },
      ...(options.cpuGroups ?? []),
    ]);
    const measureFrom = startAt + options.warmupMs;
    const cpu = Promise.all([
      Bun.sleep(measureFrom - Date.now()).then(() => meter.start()),
      Bun.sleep(measureFrom + options.durationMs - Date.now()),
    ]).then(() => meter.stop());
    const budget = 100 + options.warmupMs + options.durationMs + 30_000;
    const results = await Promise.all(
      children.map(async (child) => JSON.parse(await child.waitFor("RESULT", budget)) as WorkerResult),
    );
    return {
      ...summarize(results, options.clients, workers, options.durationMs / 1000),
      cpuSeconds: (await cpu) ?? undefined,
    };
  } finally {
    await Promise.all(children.map((child) => child.stop()));
  }
}

/** How many of `total` clients worker `index` of `workers` runs. */
function share(total: number, workers: number, index: number): number {
  return Math.floor(total / workers) + (index < total % workers ? 1 : 0);
}

export function summarize(results: WorkerResult[], clients: number, workers: number, seconds: number): RunStats {
  const latencies = Float64Array.from(results.flatMap((r) => r.latencies)).sort();
  const calls = latencies.length;
  const errors = results.reduce((sum, r) => sum + r.errors, 0);
  const sum = latencies.reduce((a, b) => a + b, 0);
  return {
    clients,
    workers,
    seconds,
    calls,
    callsPerSecond: round(calls / seconds, 1),
    p50Ms: round(percentile(latencies, 50), 3),
    p99Ms: round(percentile(latencies, 99), 3),
    meanMs: round(calls ? sum / calls : Number.NaN, 3),
    maxMs: round(calls ? latencies[calls - 1]! : Number.NaN, 3),
    errors,
    firstError: results.find((r) => r.firstError)?.firstError,
    answer: answerOf(results),
  };
}

function answerOf(results: WorkerResult[]): RunStats["answer"] {
  const json = results.reduce((n, r) => n + r.answers.json, 0);
  const sse = results.reduce((n, r) => n + r.answers.sse, 0);
  return json && sse ? "mixed" : json ? "json" : sse ? "sse" : "none";
}

/** Nearest-rank percentile of sorted values; NaN when there are none. */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
