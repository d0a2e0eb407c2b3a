// App data through the app host against postgres.js alone: `list` of 20 documents (GET /_hatch/db/items?limit=20)
// and `add` of one (POST) on a public app whose collection lets anyone read and create, at 1 and 32 keep-alive
// connections, against (q) a bare Bun.serve that runs only the same query with postgres.js on the same database.
// The ratio is the cost of everything the app host adds: routing by Host, the cached app and rules, the viewer,
// the rate limit, validation, the per-app counters and the JSON shape.
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { loadChildServer, pairedRuns, seedAppWithDocuments } from "./app-bench.ts";
import { createDatabase, freePort } from "./children.ts";
import type { RunStats } from "./load.ts";
import type { Goal } from "./report.ts";

export const DATA_LEVELS = [32, 1] as const;
/** Issue 8's target: list reads at 32 connections, on the 2-core machine. */
export const DATA_READS_GOAL = 3_000;
const ADDRESS = "bench-data";
const COLLECTION = "items";
const SEEDED = 200;

export interface DataSettings {
  seconds: number;
  warmupSeconds: number;
  workers: number;
  databaseUrl: string;
}

type Op = "list" | "add";
type Server = "q" | "h";

export interface DataRun {
  op: Op;
  clients: number;
  /** The better of two runs each, measured in the order q h h q. */
  baseline: RunStats;
  host: RunStats;
  /** host req/s over baseline req/s. */
  ratio: number | null;
  allRuns: { baseline: number[]; host: number[] };
}

export interface DataResult {
  startedAt: string;
  machine: { cpus: number; cpuModel: string; bun: string };
  settings: Omit<DataSettings, "databaseUrl">;
  runs: DataRun[];
  goal: Goal;
}

interface Seeded {
  databaseUrl: string;
  blobDir: string;
  appId: string;
  secret: string;
}

/** A fresh database with the apps schema, one public app with an open collection of SEEDED documents. */
async function seed(databaseUrl: string, blobDir: string): Promise<Seeded> {
  const config = { collections: { [COLLECTION]: { read: "anyone", create: "anyone" } } };
  const { appId } = await seedAppWithDocuments(databaseUrl, blobDir, { address: ADDRESS, files: { "index.html": "<h1>bench</h1>" }, config }, COLLECTION, SEEDED);
  return { databaseUrl, blobDir, appId, secret: randomBytes(32).toString("hex") };
}

async function measureOne(server: Server, op: Op, clients: number, seeded: Seeded, settings: DataSettings): Promise<RunStats> {
  const path = op === "list" ? `/_hatch/db/${COLLECTION}?limit=20` : `/_hatch/db/${COLLECTION}`;
  const env = {
    ...process.env,
    PORT: String(freePort()),
    DATABASE_URL: seeded.databaseUrl,
    BLOB_DIR: seeded.blobDir,
    BENCH_ADDRESS: ADDRESS,
    BENCH_PATH: path,
    BENCH_SECRET: seeded.secret,
    BENCH_APP_ID: seeded.appId,
    BENCH_COLLECTION: COLLECTION,
  };
  const script = server === "q" ? "data-baseline-server.ts" : "data-server.ts";
  return loadChildServer(script, env, op === "add" ? { method: "POST", json: JSON.stringify({ title: "New item", done: false, priority: 2 }) } : {}, clients, settings);
}

export async function measureData(settings: DataSettings, progress: (message: string) => void): Promise<DataResult> {
  const startedAt = new Date().toISOString();
  const database = await createDatabase(settings.databaseUrl, `hatch_bench_data_${Date.now().toString(36)}_${process.pid}`);
  const blobDir = mkdtempSync(join(tmpdir(), "hatch-bench-data-"));
  try {
    const seeded = await seed(database.url, blobDir);
    const runs: DataRun[] = [];
    for (const op of ["list", "add"] as const) {
      for (const clients of DATA_LEVELS) {
        const paired = await pairedRuns(
          (which) => measureOne(which === "baseline" ? "q" : "h", op, clients, seeded, settings),
          (which, stats) => {
            progress(`data ${op} x${clients} (${which === "baseline" ? "postgres.js" : "app host"}): ${stats.callsPerSecond} req/s, p50 ${stats.p50Ms} ms, ${stats.errors} errors`);
            if (stats.firstError) progress(`  first error: ${stats.firstError}`);
          },
        );
        runs.push({ op, clients, ...paired });
      }
    }
    const reads = runs.find((r) => r.op === "list" && r.clients === 32)?.host.callsPerSecond ?? null;
    const { databaseUrl: _, ...shown } = settings;
    return {
      startedAt,
      machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? "unknown", bun: Bun.version },
      settings: shown,
      runs,
      goal: { name: `app host list reads/s at 32 connections >= ${DATA_READS_GOAL}`, value: reads, limit: DATA_READS_GOAL, met: reads === null ? null : reads >= DATA_READS_GOAL },
    };
  } finally {
    await database.drop();
    rmSync(blobDir, { recursive: true, force: true });
  }
}

const fmt = (value: number | undefined | null, digits: number) => (value === undefined || value === null || !Number.isFinite(value) ? "n/a" : value.toFixed(digits));

export function formatData(result: DataResult): string {
  const rows = [["op", "conns", "(q) postgres.js req/s", "(h) app host req/s", "(h)/(q)", "(h) p50 ms", "(h) p99 ms", "(h) errors", "(h) server CPU us/req"]];
  for (const run of result.runs) {
    const cpu = run.host.cpuSeconds?.server !== undefined && run.host.calls > 0 ? fmt((run.host.cpuSeconds.server * 1e6) / run.host.calls, 1) : "n/a";
    rows.push([run.op, String(run.clients), fmt(run.baseline.callsPerSecond, 0), fmt(run.host.callsPerSecond, 0), fmt(run.ratio, 2), fmt(run.host.p50Ms, 3), fmt(run.host.p99Ms, 3), String(run.host.errors), cpu]);
  }
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => row[col]!.length)));
  const table = rows.map((row) => row.map((cell, col) => (col < 1 ? cell.padEnd(widths[col]!) : cell.padStart(widths[col]!))).join("  ")).join("\n");
  const verdict = result.goal.met === null ? "NOT MEASURED" : result.goal.met ? "MET" : "NOT MET";
  const errors = result.runs.flatMap((run) => [run.baseline, run.host].filter((r) => r.errors > 0).map((r) => `${run.op} x${run.clients}: ${r.errors} failed (first: ${r.firstError})`));
  return [
    `Data benchmark: ${result.machine.cpus} CPUs (${result.machine.cpuModel}), Bun ${result.machine.bun}; ${result.settings.seconds} s measured per run after ${result.settings.warmupSeconds} s warmup; best of 2 runs each (order q h h q)`,
    `list = GET 20 of ${SEEDED} documents, add = POST one document; (q) Bun.serve + postgres.js running only the query, (h) the app host`,
    "",
    table,
    "",
    `${verdict.padEnd(12)}  ${result.goal.name}: ${fmt(result.goal.value, 0)}`,
    ...errors.map((line) => `note: ${line}`),
    ...(cpus().length <= 2 ? ["note: the load generator and Postgres share the CPUs with the server under test"] : []),
  ].join("\n");
}
