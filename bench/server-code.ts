// Server code through the app host against the same handler run natively in Bun: bench/server-code-handler.js's
// hello world (GET /api/hello) and its list of 20 documents through env.db (GET /api/items), at 1 and 32 keep-alive
// connections. (h) is the apps service on Postgres running the handler in the QuickJS sandbox; (n) is Bun.serve
// calling the same module's fetch with a native env (postgres.js). The ratio is the cost of the sandbox and of
// everything the app host adds (Host routing, the viewer, the rate limit, the host call for env.db).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { loadChildServer, pairedRuns, seedAppWithDocuments, type Paired } from "./app-bench.ts";
import { createDatabase, freePort } from "./children.ts";
import type { RunStats } from "./load.ts";
import type { Goal } from "./report.ts";

export const SERVER_LEVELS = [32, 1] as const;
/** The target: the hello-world handler through the app host at 32 connections, on the 2-core machine. */
export const SERVER_HELLO_GOAL = 1_000;
const ADDRESS = "bench-server";
const SEEDED = 200;
const OPS = { hello: "/api/hello", list: "/api/items" } as const;
type Op = keyof typeof OPS;
type Server = "n" | "h";

export interface ServerSettings {
  seconds: number;
  warmupSeconds: number;
  workers: number;
  databaseUrl: string;
}

export interface ServerRun extends Paired {
  op: Op;
  clients: number;
  /** `baseline`: the handler natively in Bun; the better of two runs each, in the order n h h n. */
}

export interface ServerResult {
  startedAt: string;
  machine: { cpus: number; cpuModel: string; bun: string };
  settings: Omit<ServerSettings, "databaseUrl">;
  runs: ServerRun[];
  goal: Goal;
}

interface Seeded {
  databaseUrl: string;
  blobDir: string;
  appId: string;
  secret: string;
}

async function seed(databaseUrl: string, blobDir: string): Promise<Seeded> {
  const source = readFileSync(join(import.meta.dir, "server-code-handler.js"), "utf8");
  const config = { server: "api/index.js", collections: { items: { read: "anyone" } } };
  const files = { "index.html": "<h1>bench</h1>", "api/index.js": { content: source, contentType: "text/javascript" } };
  const { appId } = await seedAppWithDocuments(databaseUrl, blobDir, { address: ADDRESS, files, config }, "items", SEEDED);
  return { databaseUrl, blobDir, appId, secret: randomBytes(32).toString("hex") };
}

async function measureOne(server: Server, op: Op, clients: number, seeded: Seeded, settings: ServerSettings): Promise<RunStats> {
  const env = { ...process.env, PORT: String(freePort()), DATABASE_URL: seeded.databaseUrl, BLOB_DIR: seeded.blobDir, BENCH_ADDRESS: ADDRESS, BENCH_PATH: OPS[op], BENCH_SECRET: seeded.secret, BENCH_APP_ID: seeded.appId };
  const script = server === "n" ? "server-code-native.ts" : "server-code-server.ts";
  return loadChildServer(script, env, {}, clients, settings);
}

export async function measureServerCode(settings: ServerSettings, progress: (message: string) => void): Promise<ServerResult> {
  const startedAt = new Date().toISOString();
  const database = await createDatabase(settings.databaseUrl, `hatch_bench_server_${Date.now().toString(36)}_${process.pid}`);
  const blobDir = mkdtempSync(join(tmpdir(), "hatch-bench-server-"));
  try {
    const seeded = await seed(database.url, blobDir);
    const runs: ServerRun[] = [];
    for (const op of ["hello", "list"] as const) {
      for (const clients of SERVER_LEVELS) {
        const paired = await pairedRuns(
          (which) => measureOne(which === "baseline" ? "n" : "h", op, clients, seeded, settings),
          (which, stats) => {
            progress(`server ${op} x${clients} (${which === "baseline" ? "native Bun" : "app host"}): ${stats.callsPerSecond} req/s, p50 ${stats.p50Ms} ms, ${stats.errors} errors`);
            if (stats.firstError) progress(`  first error: ${stats.firstError}`);
          },
        );
        runs.push({ op, clients, ...paired });
      }
    }
    const hello = runs.find((r) => r.op === "hello" && r.clients === 32)?.host.callsPerSecond ?? null;
    const { databaseUrl: _, ...shown } = settings;
    return {
      startedAt,
      machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? "unknown", bun: Bun.version },
      settings: shown,
      runs,
      goal: { name: `server code hello world req/s through the app host at 32 connections >= ${SERVER_HELLO_GOAL}`, value: hello, limit: SERVER_HELLO_GOAL, met: hello === null ? null : hello >= SERVER_HELLO_GOAL },
    };
  } finally {
    await database.drop();
    rmSync(blobDir, { recursive: true, force: true });
  }
}

const fmt = (value: number | undefined | null, digits: number) => (value === undefined || value === null || !Number.isFinite(value) ? "n/a" : value.toFixed(digits));

export function formatServerCode(result: ServerResult): string {
  const rows = [["op", "conns", "(n) native req/s", "(h) app host req/s", "(h)/(n)", "(h) p50 ms", "(h) p99 ms", "(h) errors", "(h) server CPU us/req"]];
  for (const run of result.runs) {
    const cpu = run.host.cpuSeconds?.server !== undefined && run.host.calls > 0 ? fmt((run.host.cpuSeconds.server * 1e6) / run.host.calls, 1) : "n/a";
    rows.push([run.op, String(run.clients), fmt(run.baseline.callsPerSecond, 0), fmt(run.host.callsPerSecond, 0), fmt(run.ratio, 2), fmt(run.host.p50Ms, 3), fmt(run.host.p99Ms, 3), String(run.host.errors), cpu]);
  }
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => row[col]!.length)));
  const table = rows.map((row) => row.map((cell, col) => (col < 1 ? cell.padEnd(widths[col]!) : cell.padStart(widths[col]!))).join("  ")).join("\n");
  const verdict = result.goal.met === null ? "NOT MEASURED" : result.goal.met ? "MET" : "NOT MET";
  const errors = result.runs.flatMap((run) => [run.baseline, run.host].filter((r) => r.errors > 0).map((r) => `${run.op} x${run.clients}: ${r.errors} failed (first: ${r.firstError})`));
  return [
    `Server code benchmark: ${result.machine.cpus} CPUs (${result.machine.cpuModel}), Bun ${result.machine.bun}; ${result.settings.seconds} s measured per run after ${result.settings.warmupSeconds} s warmup; best of 2 runs each (order n h h n)`,
    `hello = GET /api/hello, list = GET /api/items (env.db list of 20 of ${SEEDED} documents); (n) Bun.serve calling the handler natively, (h) the app host running it in QuickJS`,
    "",
    table,
    "",
    `${verdict.padEnd(12)}  ${result.goal.name}: ${fmt(result.goal.value, 0)}`,
    ...errors.map((line) => `note: ${line}`),
    ...(cpus().length <= 2 ? ["note: the load generator and Postgres share the CPUs with the server under test"] : []),
  ].join("\n");
}
