// Server code through the app host against the same handler run natively in Bun: bench/server-code-handler.js's
// hello world (GET /api/hello) and its list of 20 documents through env.db (GET /api/items), at 1 and 32 keep-alive
// connections. (h) is the apps service on Postgres running the handler in the QuickJS sandbox; (n) is Bun.serve
// calling the same module's fetch with a native env (postgres.js). The ratio is the cost of the sandbox and of
// everything the app host adds (Host routing, the viewer, the rate limit, the host call for env.db).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { openServiceDatabase } from "@hatch/shared";
import { APPS_MIGRATIONS } from "@hatch/apps";
import { dataUsage, documents } from "../services/apps/src/db/schema.ts";
import { seedApp } from "../services/apps/test/support/seed.ts";
import { createDiskBlobStore } from "../services/apps/src/blobs/disk.ts";
import { Child, createDatabase, freePort } from "./children.ts";
import { runLoad, type RunStats } from "./load.ts";
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

export interface ServerRun {
  op: Op;
  clients: number;
  /** The better of two runs each, in the order n h h n. */
  native: RunStats;
  host: RunStats;
  /** host req/s over native req/s. */
  ratio: number | null;
  allRuns: { native: number[]; host: number[] };
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
  const handle = await openServiceDatabase({ kind: "postgres", url: databaseUrl }, { schema: "apps", migrationsFolder: APPS_MIGRATIONS });
  try {
    const source = readFileSync(join(import.meta.dir, "server-code-handler.js"), "utf8");
    const config = { server: "api/index.js", collections: { items: { read: "anyone" } } };
    const files = { "index.html": "<h1>bench</h1>", "api/index.js": { content: source, contentType: "text/javascript" } };
    const app = await seedApp({ db: handle.db, blobs: createDiskBlobStore(blobDir) }, { address: ADDRESS, visibility: "public", files, config });
    const start = Date.now() - SEEDED * 1000;
    await handle.db.insert(documents).values(
      Array.from({ length: SEEDED }, (_, i) => {
        const data = { title: `Item ${i}`, done: i % 3 === 0, priority: i % 5, note: "A short note, about the length an app stores." };
        return { appId: app.id, collection: "items", id: randomBytes(12).toString("base64url"), data, bytes: JSON.stringify(data).length, createdAt: new Date(start + i * 1000), updatedAt: new Date(start + i * 1000) };
      }),
    );
    await handle.db.insert(dataUsage).values({ appId: app.id, documents: SEEDED });
    return { databaseUrl, blobDir, appId: app.id, secret: randomBytes(32).toString("hex") };
  } finally {
    await handle.close();
  }
}

async function measureOne(server: Server, op: Op, clients: number, seeded: Seeded, settings: ServerSettings): Promise<RunStats> {
  const env = { ...process.env, PORT: String(freePort()), DATABASE_URL: seeded.databaseUrl, BLOB_DIR: seeded.blobDir, BENCH_ADDRESS: ADDRESS, BENCH_PATH: OPS[op], BENCH_SECRET: seeded.secret, BENCH_APP_ID: seeded.appId };
  const script = server === "n" ? "server-code-native.ts" : "server-code-server.ts";
  const child = new Child(script.replace(/\.ts$/, ""), [process.execPath, join(import.meta.dir, script)], env);
  try {
    const ready = JSON.parse(await child.waitFor("READY", 60_000)) as { url: string; host: string };
    return await runLoad({
      mcpUrl: "",
      http: { url: ready.url, host: ready.host },
      clients,
      workers: clients === 1 ? 1 : settings.workers,
      warmupMs: settings.warmupSeconds * 1000,
      durationMs: settings.seconds * 1000,
      cpuGroups: [{ name: "server", roots: [child.proc.pid] }, { name: "postgres", comm: "postgres" }],
    });
  } finally {
    await child.stop();
  }
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
        const measured: Record<Server, RunStats[]> = { n: [], h: [] };
        for (const server of ["n", "h", "h", "n"] as const) {
          const stats = await measureOne(server, op, clients, seeded, settings);
          measured[server].push(stats);
          progress(`server ${op} x${clients} (${server === "n" ? "native Bun" : "app host"}): ${stats.callsPerSecond} req/s, p50 ${stats.p50Ms} ms, ${stats.errors} errors`);
          if (stats.firstError) progress(`  first error: ${stats.firstError}`);
        }
        const best = (list: RunStats[]) => list.reduce((a, b) => (b.callsPerSecond > a.callsPerSecond ? b : a));
        const native = best(measured.n);
        const host = best(measured.h);
        const ratio = native.callsPerSecond > 0 ? Math.round((host.callsPerSecond / native.callsPerSecond) * 100) / 100 : null;
        runs.push({ op, clients, native, host, ratio, allRuns: { native: measured.n.map((r) => r.callsPerSecond), host: measured.h.map((r) => r.callsPerSecond) } });
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
    rows.push([run.op, String(run.clients), fmt(run.native.callsPerSecond, 0), fmt(run.host.callsPerSecond, 0), fmt(run.ratio, 2), fmt(run.host.p50Ms, 3), fmt(run.host.p99Ms, 3), String(run.host.errors), cpu]);
  }
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => row[col]!.length)));
  const table = rows.map((row) => row.map((cell, col) => (col < 1 ? cell.padEnd(widths[col]!) : cell.padStart(widths[col]!))).join("  ")).join("\n");
  const verdict = result.goal.met === null ? "NOT MEASURED" : result.goal.met ? "MET" : "NOT MET";
  const errors = result.runs.flatMap((run) => [run.native, run.host].filter((r) => r.errors > 0).map((r) => `${run.op} x${run.clients}: ${r.errors} failed (first: ${r.firstError})`));
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
