// `bun run bench`: whoami through (a) a bare MCP server per protocol era, (b) the embedded stack, (c) the gateway and
// orgs as separate processes over NATS and Postgres, at 1 and 32 concurrent clients of each era; then the app host
// against bare Bun.serve and the publish of a large folder. One target runs at a time, so none shares the machine with
// another. Prints a table and writes bench/results/latest.json. Never fails on timing; exits non-zero only when
// something could not run.
import { cpus } from "node:os";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { formatAppHost, measureAppHost } from "./app-host.ts";
import { formatData, measureData } from "./data.ts";
import { formatServerCode, measureServerCode } from "./server-code.ts";
import { createDatabase, stopAllChildren } from "./children.ts";
import { runLoad, type RunStats } from "./load.ts";
import { measureFloors } from "./nats-floor.ts";
import { formatPublishReport, runPublishBench } from "./publish.ts";
import { formatToolList, measureToolList } from "./tool-list.ts";
import type { Era } from "./load-worker.ts";
import {
  allRatios,
  crossEraRatios,
  formatReport,
  goalsOf,
  LEVELS,
  ROWS,
  type BenchReport,
  type RowKey,
  type TargetResult,
} from "./report.ts";
import {
  startBaseline,
  startClusterTarget,
  startEmbedded,
  TARGETS,
  type RunningTarget,
  type TargetKey,
  type TargetSettings,
} from "./targets.ts";

/** Parts measured on their own after the whoami targets: `host` (bench/app-host.ts), `data` (bench/data.ts), `server` (bench/server-code.ts), `publish` (bench/publish.ts). */
const EXTRA_PARTS = ["host", "data", "server", "publish"];

/** Start-up and shut-down allowance of the watchdog, on top of the measured runs. */
const SETUP_ALLOWANCE_MS = 90_000;
/** Round trips of each way in the floor (bench/nats-floor.ts), after its warmup: a few seconds in all. */
const FLOOR_ROUND_TRIPS = 1_500;

function number(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === "" ? fallback : Number(raw);
  if (!Number.isFinite(value) || value < min || value > max)
    fail(`${name} must be a number from ${min} to ${max} (got ${raw})`);
  return value;
}

function fail(message: string): never {
  process.stderr.write(`bench: ${message}\n`);
  process.exit(2);
}

function readSettings() {
  const targets = (process.env.BENCH_TARGETS ?? "a,b,c,host,data,server,publish")
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);
  if (targets.length === 0 || targets.some((t) => !(t in TARGETS) && !EXTRA_PARTS.includes(t)))
    fail(`BENCH_TARGETS is a comma-separated subset of a,b,c,${EXTRA_PARTS.join(",")}`);
  const eras = (process.env.BENCH_ERAS ?? "2025,2026")
    .split(",")
    .map((e) => e.trim())
    .filter(Boolean);
  if (eras.length === 0 || eras.some((e) => e !== "2025" && e !== "2026"))
    fail("BENCH_ERAS is 2025, 2026 or both (the protocol era of the whoami clients, and of (a)'s servers)");
  const logLevel = process.env.BENCH_LOG_LEVEL ?? "warn";
  if (!["debug", "info", "warn", "error", "silent"].includes(logLevel))
    fail("BENCH_LOG_LEVEL is one of debug, info, warn, error, silent");
  return {
    seconds: number("BENCH_SECONDS", 3, 0.5, 30),
    warmupSeconds: number("BENCH_WARMUP_SECONDS", 2, 0, 10),
    // Measured on the 2-CPU target machine: one load process drives 32 clients on about a third of a CPU, and a
    // second one only adds its own overhead to a machine the servers already saturate. Raise it if the report
    // says the load generator was CPU-bound.
    workers: Math.round(number("BENCH_WORKERS", 1, 1, 8)),
    targets: targets.filter((t): t is TargetKey => t in TARGETS),
    eras: eras as Era[],
    host: targets.includes("host"),
    data: targets.includes("data"),
    server: targets.includes("server"),
    publish: targets.includes("publish"),
    logLevel,
    databaseUrl: process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    natsUrl: process.env.BENCH_NATS_URL ?? "nats://127.0.0.1:4222",
  };
}
type Settings = ReturnType<typeof readSettings>;

const progress = (message: string) => process.stderr.write(`bench: ${message}\n`);

/** Cleanups run last-in first-out, once, on success, failure, watchdog or Ctrl-C. */
const cleanups: (() => Promise<void>)[] = [];
let cleaning: Promise<void> | undefined;
/** Set on Ctrl-C or by the watchdog: stop at the next step and write no report. */
let aborted = false;
function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    await stopAllChildren().catch(() => {});
    for (const cleanup of cleanups.reverse()) {
      await cleanup().catch((error: unknown) =>
        progress(`cleanup failed: ${error instanceof Error ? error.message : String(error)}`),
      );
    }
  })();
  return cleaning;
}

/** How each era's SDK answers a whoami by itself: the baseline's answer when no (b) or (c) ran before it. */
const SDK_DEFAULT_ANSWER: Record<Era, "json" | "sse"> = { "2025": "sse", "2026": "json" };

/** A fresh database for one deployment, dropped at the end of the run. */
async function runDatabase(settings: Settings, targetSettings: TargetSettings, name: string): Promise<string> {
  const database = await createDatabase(settings.databaseUrl, `hatch_bench_${targetSettings.runId}_${name}`);
  cleanups.push(() => database.drop());
  return database.url;
}

/** The rows measured on `key` in this run: one per era of BENCH_ERAS. */
function rowsOf(key: TargetKey, settings: Settings): RowKey[] {
  return (Object.keys(ROWS) as RowKey[]).filter(
    (row) => ROWS[row].target === key && settings.eras.includes(ROWS[row].era),
  );
}

/** Starts one deployment (`start`), measures each of `rows` on it at each level with its era's client, stops it. */
async function measureDeployment(
  name: string,
  start: () => Promise<RunningTarget>,
  rows: RowKey[],
  settings: Settings,
): Promise<Partial<Record<RowKey, TargetResult>>> {
  progress(`${name}: starting`);
  const started = performance.now();
  const target = await start();
  cleanups.push(() => target.stop());
  if (aborted) throw new Error("interrupted");
  progress(`${name}: ready in ${Math.round(performance.now() - started)} ms`);
  const results: Partial<Record<RowKey, TargetResult>> = {};
  try {
    for (const row of rows) {
      const { label, era, target: key } = ROWS[row];
      const runs: TargetResult["runs"] = {};
      // 32 clients first: its warmup alone makes thousands of calls, so the JIT is warm for the 1-client latency too.
      for (const clients of [...LEVELS].reverse()) {
        const stats = await runLoad({
          mcpUrl: target.mcpUrl,
          token: target.token,
          era,
          clients,
          workers: clients === 1 ? 1 : settings.workers,
          warmupMs: settings.warmupSeconds * 1000,
          durationMs: settings.seconds * 1000,
          cpuGroups: [
            ...target.cpuGroups,
            { name: "postgres", comm: "postgres" },
            { name: "nats", comm: "nats-server" },
          ],
        });
        if (aborted) throw new Error("interrupted");
        runs[String(clients)] = stats;
        progress(
          `${label} x${clients}: ${stats.callsPerSecond} calls/s, p50 ${stats.p50Ms} ms, p99 ${stats.p99Ms} ms, ${stats.errors} errors`,
        );
        if (stats.firstError) progress(`  first error: ${stats.firstError}`);
      }
      results[row] = { ...TARGETS[key], label, details: { ...target.details, era }, runs };
    }
  } finally {
    await target.stop();
  }
  return results;
}

/** Past the expected length of the run something is stuck: clean up and stop rather than hang. */
function startWatchdog(settings: Settings): void {
  const rows = settings.targets.length * settings.eras.length;
  const runMs = rows * LEVELS.length * (settings.warmupSeconds + settings.seconds + 5) * 1000;
  // App host: six runs (s, n, h, h, n, s), each with its start and a wrk run of the same length.
  const hostMs = settings.host ? 6 * (settings.warmupSeconds + 2 * settings.seconds + 10) * 1000 : 0;
  // Data: two operations at two levels, four runs each (q, h, h, q), each with its server's start.
  const dataMs = settings.data ? 16 * (settings.warmupSeconds + settings.seconds + 10) * 1000 : 0;
  // Server code: two handlers at two levels, four runs each (n, h, h, n).
  const serverMs = settings.server ? 16 * (settings.warmupSeconds + settings.seconds + 10) * 1000 : 0;
  const limitMs = SETUP_ALLOWANCE_MS + runMs + hostMs + dataMs + serverMs + (settings.publish ? 60_000 : 0);
  const watchdog = setTimeout(() => {
    aborted = true;
    progress(`still running after ${Math.round(limitMs / 1000)} s: giving up`);
    void cleanUp().finally(() => process.exit(1));
  }, limitMs);
  watchdog.unref();
}

async function main(): Promise<void> {
  const settings = readSettings();
  startWatchdog(settings);
  // Bytes, not time: printed first, always (it takes no server).
  const toolList = measureToolList();
  mkdirSync(join(import.meta.dir, "results"), { recursive: true });
  writeFileSync(join(import.meta.dir, "results", "tool-list.json"), `${JSON.stringify(toolList, null, 2)}\n`);
  process.stdout.write(`${formatToolList(toolList)}\n\nwritten: bench/results/tool-list.json\n\n`);
  if (settings.targets.length > 0) await measureWhoami(settings);
  if (settings.host) {
    progress("app host: starting");
    const result = await measureAppHost(settings, progress);
    if (aborted) throw new Error("interrupted");
    const dir = join(import.meta.dir, "results");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "app-host.json"), `${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(`\n${formatAppHost(result)}\n\nwritten: bench/results/app-host.json\n`);
  }
  if (settings.data) {
    progress("data: starting");
    const result = await measureData(settings, progress);
    if (aborted) throw new Error("interrupted");
    const dir = join(import.meta.dir, "results");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "data.json"), `${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(`\n${formatData(result)}\n\nwritten: bench/results/data.json\n`);
  }
  if (settings.server) {
    progress("server code: starting");
    const result = await measureServerCode(settings, progress);
    if (aborted) throw new Error("interrupted");
    const dir = join(import.meta.dir, "results");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "server-code.json"), `${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(`\n${formatServerCode(result)}\n\nwritten: bench/results/server-code.json\n`);
  }
  if (settings.publish) {
    progress("publish: starting");
    const publish = await runPublishBench(progress);
    const dir = join(import.meta.dir, "results");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "publish.json"), `${JSON.stringify(publish, null, 2)}\n`);
    process.stdout.write(`\n${formatPublishReport(publish)}\n\nwritten: bench/results/publish.json\n`);
  }
}

async function measureWhoami(settings: Settings): Promise<void> {
  const runId = `${Date.now().toString(36)}_${process.pid}`;
  const targetSettings: TargetSettings = { natsUrl: settings.natsUrl, logLevel: settings.logLevel, runId };
  const startedAt = new Date().toISOString();
  // The gateway first: each era's baseline then answers in the format the gateway chose for that era's client (plain
  // JSON or an SSE stream per call), so that difference does not show up as gateway cost.
  const measured: BenchReport["targets"] = {};
  const answers: Partial<Record<Era, "json" | "sse">> = {};
  for (const key of (["c", "b"] as const).filter((k) => settings.targets.includes(k))) {
    const start = async () =>
      key === "b"
        ? startEmbedded(targetSettings)
        : startClusterTarget(targetSettings, await runDatabase(settings, targetSettings, key));
    const results = await measureDeployment(TARGETS[key].label, start, rowsOf(key, settings), settings);
    Object.assign(measured, results);
    for (const era of settings.eras) {
      const answer = results[`${key}${era}`]?.runs["32"]?.answer;
      if (answer) answers[era] ??= answer === "json" ? "json" : "sse";
    }
  }
  // (a): a server per era, each the smallest honest server of its protocol version, driven by that era's client.
  for (const row of settings.targets.includes("a") ? rowsOf("a", settings) : []) {
    const era = ROWS[row].era;
    const answer = answers[era] ?? SDK_DEFAULT_ANSWER[era];
    const start = async () => startBaseline(await runDatabase(settings, targetSettings, row), era, answer);
    Object.assign(measured, await measureDeployment(ROWS[row].label, start, [row], settings));
  }
  const targets: BenchReport["targets"] = {};
  for (const key of Object.keys(ROWS) as RowKey[]) if (measured[key]) targets[key] = measured[key];
  // The machine's own cost of the hop (c) adds, in the same run: what the added p50 at 1 client is read against.
  let floor: BenchReport["floor"];
  const notes: string[] = [];
  if (settings.targets.includes("c")) {
    progress("floor: sequential round trips, TCP and NATS");
    try {
      const floors = await measureFloors(FLOOR_ROUND_TRIPS, 1);
      floor = { tcp: floors.tcp[0]!, nats: floors.nats[0]!, bus: floors.bus[0]! };
    } catch (error) {
      // The figures measured so far still make the report.
      notes.push(`the floor could not be measured: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  const errors = Object.values(targets).reduce(
    (sum, t) => sum + Object.values(t.runs).reduce((s, r) => s + r.errors, 0),
    0,
  );
  if (errors > 0) notes.push(`${errors} calls failed; failed calls are not in calls/s or latency`);
  for (const [key, target] of Object.entries(targets)) {
    for (const run of Object.values(target.runs)) {
      const label = `${ROWS[key as RowKey].label} x${run.clients}`;
      const busy = (run.cpuSeconds?.load ?? 0) / (run.seconds * run.workers);
      if (busy > 0.9)
        notes.push(
          `${label}: the load generator used ${Math.round(busy * 100)}% of a CPU per process and may have limited the result; try BENCH_WORKERS=${run.workers + 1}`,
        );
      const disturbed = disturbance(run);
      if (disturbed > 0.1)
        notes.push(
          `${label}: processes outside the benchmark (or the VM host) took ${Math.round(disturbed * 100)}% of the CPUs; its numbers are low`,
        );
    }
  }
  if (cpus().length <= 2)
    notes.push("the load generator shares the CPUs with the server under test (and with NATS and Postgres)");
  const report: BenchReport = {
    startedAt,
    finishedAt: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? "unknown",
      bun: Bun.version,
      platform: `${process.platform}-${process.arch}`,
    },
    settings: { ...settings, databaseUrl: redact(settings.databaseUrl), levels: LEVELS },
    targets,
    ratios: allRatios(targets),
    crossEra: crossEraRatios(targets),
    goals: goalsOf(targets),
    floor,
    notes,
  };
  if (aborted) throw new Error("interrupted");
  const dir = join(import.meta.dir, "results");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "latest.json"), `${JSON.stringify(report, null, 2)}\n`);
  // The printed figures, kept in git (bench/.gitignore lets this one through): the closing note quotes them.
  writeFileSync(join(dir, "whoami.txt"), `${report.startedAt}\n\n${formatReport(report)}\n`);
  process.stdout.write(`\n${formatReport(report)}\n\nwritten: bench/results/latest.json, bench/results/whoami.txt\n`);
}

/** The share of all CPUs that went to other processes or (as steal) to other VMs during a run's window. */
function disturbance(run: RunStats): number {
  const { machine, steal = 0, ...ours } = run.cpuSeconds ?? {};
  if (machine === undefined) return 0;
  const used = Object.values(ours).reduce((a, b) => a + b, 0);
  return (Math.max(0, machine - used) + steal) / (run.seconds * cpus().length);
}

function redact(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = "***";
  return parsed.toString();
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    aborted = true;
    progress(`${signal}: cleaning up`);
    void cleanUp().finally(() => process.exit(130));
  });
}

try {
  await main();
} catch (error) {
  if (!aborted)
    process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
} finally {
  await cleanUp();
}
