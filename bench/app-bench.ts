// What the app host benches (data, server code) share: an app seeded with a collection of documents, one load run
// against a child server process, and the paired runs that compare a baseline with the app host in one sitting.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { openServiceDatabase } from "@hatch/platform";
import { APPS_MIGRATIONS } from "@hatch/apps";
import { createDiskBlobStore } from "../services/apps/src/blobs/disk.ts";
import { documents, documentUsage } from "../services/apps/src/db/schema.ts";
import { seedApp, type SeedContent } from "../services/apps/test/support/seed.ts";
import { Child, createDatabase, freePort } from "./children.ts";
import { runLoad, type LoadOptions, type RunStats } from "./load.ts";
import type { Goal } from "./report.ts";

export interface AppBenchSettings {
  seconds: number;
  warmupSeconds: number;
  workers: number;
}

/** A public app at `address` with `files` and `config`, and `count` documents in `collection` (one a second, oldest first). */
export async function seedAppWithDocuments(
  databaseUrl: string,
  blobDir: string,
  app: { address: string; files: Record<string, SeedContent>; config: Record<string, unknown> },
  collection: string,
  count: number,
): Promise<{ appId: string }> {
  const handle = await openServiceDatabase(
    { kind: "postgres", url: databaseUrl },
    { schema: "apps", migrationsFolder: APPS_MIGRATIONS },
  );
  try {
    const seeded = await seedApp(
      { db: handle.db, blobs: createDiskBlobStore(blobDir) },
      { ...app, visibility: "public" },
    );
    const start = Date.now() - count * 1000;
    await handle.db.insert(documents).values(
      Array.from({ length: count }, (_, i) => {
        const data = {
          title: `Item ${i}`,
          done: i % 3 === 0,
          priority: i % 5,
          note: "A short note, about the length an app stores.",
        };
        return {
          appId: seeded.id,
          collection,
          id: randomBytes(12).toString("base64url"),
          data,
          bytes: JSON.stringify(data).length,
          createdAt: new Date(start + i * 1000),
          updatedAt: new Date(start + i * 1000),
        };
      }),
    );
    // Counted as the migration carries counts over: one shard with no room of its own (the first add shares it out).
    await handle.db.insert(documentUsage).values({ appId: seeded.id, shard: 0, documents: count, allowed: count });
    return { appId: seeded.id };
  } finally {
    await handle.close();
  }
}

/** Starts `script` (a bench server that prints READY {url, host}), loads it with `clients` connections, stops it. */
export async function loadChildServer(
  script: string,
  env: Record<string, string | undefined>,
  http: Omit<NonNullable<LoadOptions["http"]>, "url" | "host">,
  clients: number,
  settings: AppBenchSettings,
): Promise<RunStats> {
  const child = new Child(script.replace(/\.ts$/, ""), [process.execPath, join(import.meta.dir, script)], env);
  try {
    const ready = JSON.parse(await child.waitFor("READY", 60_000)) as { url: string; host: string };
    return await runLoad({
      mcpUrl: "",
      http: { url: ready.url, host: ready.host, ...http },
      clients,
      workers: clients === 1 ? 1 : settings.workers,
      warmupMs: settings.warmupSeconds * 1000,
      durationMs: settings.seconds * 1000,
      cpuGroups: [
        { name: "server", roots: [child.proc.pid] },
        { name: "postgres", comm: "postgres" },
      ],
    }).catch((error: unknown) => {
      // The load failed (no answer, say): what the server said is usually why.
      throw new Error(
        `${error instanceof Error ? error.message : String(error)}\n${child.name} said:\n${child.output()}`,
      );
    });
  } finally {
    await child.stop();
  }
}

export interface Paired {
  baseline: RunStats;
  host: RunStats;
  /** host req/s over baseline req/s. */
  ratio: number | null;
  allRuns: { baseline: number[]; host: number[] };
}

/**
 * Runs the baseline and the app host twice each, in the order baseline, host, host, baseline (so drift on a noisy
 * machine hits both alike), and keeps the better run of each.
 */
export async function pairedRuns(
  measure: (which: "baseline" | "host") => Promise<RunStats>,
  report: (which: "baseline" | "host", stats: RunStats) => void,
): Promise<Paired> {
  const runs: Record<"baseline" | "host", RunStats[]> = { baseline: [], host: [] };
  for (const which of ["baseline", "host", "host", "baseline"] as const) {
    const stats = await measure(which);
    runs[which].push(stats);
    report(which, stats);
  }
  const best = (list: RunStats[]) => list.reduce((a, b) => (b.callsPerSecond > a.callsPerSecond ? b : a));
  const baseline = best(runs.baseline);
  const host = best(runs.host);
  const ratio =
    baseline.callsPerSecond > 0 ? Math.round((host.callsPerSecond / baseline.callsPerSecond) * 100) / 100 : null;
  return {
    baseline,
    host,
    ratio,
    allRuns: { baseline: runs.baseline.map((r) => r.callsPerSecond), host: runs.host.map((r) => r.callsPerSecond) },
  };
}

/** What a paired app host bench needs: its seeding, how to measure one side, what it reports. */
export interface PairedBenchSpec<Op extends string> {
  /** Names the database and blob folder (`hatch_bench_<name>_…`) and the progress lines. */
  name: string;
  ops: readonly Op[];
  levels: readonly number[];
  /** Seeds a fresh database (the apps schema) and blob folder; returns the app's id. */
  seed(databaseUrl: string, blobDir: string): Promise<{ appId: string }>;
  /** The environment of one side's child server for one op (PORT, DATABASE_URL and BLOB_DIR are added). */
  childEnv(which: "baseline" | "host", op: Op, seeded: SeededBench): Record<string, string>;
  /** Script of each side, and what a request of one op sends (method and body). */
  scripts: { baseline: string; host: string };
  request?(op: Op): Omit<NonNullable<LoadOptions["http"]>, "url" | "host">;
  baselineName: string;
  /**
   * What is judged, each at one op and level: `rate` the host's req/s at least `limit`; `ratio` the host's req/s at
   * least `limit` times the baseline's of the same pair.
   */
  goals: { name: string; op: Op; clients: number; kind: "rate" | "ratio"; limit: number }[];
}

export interface SeededBench {
  databaseUrl: string;
  blobDir: string;
  appId: string;
  /** The bench's HATCH_SECRET, shared by the child servers. */
  secret: string;
}

export interface PairedRun<Op extends string> extends Paired {
  op: Op;
  clients: number;
}

export interface PairedBenchResult<Op extends string, Settings> {
  startedAt: string;
  machine: { cpus: number; cpuModel: string; bun: string };
  settings: Settings;
  runs: PairedRun<Op>[];
  goals: Goal[];
}

/** Runs every op at every level, baseline and host paired (b h h b), on a fresh database that is dropped after. */
export async function measurePaired<Op extends string, S extends AppBenchSettings & { databaseUrl: string }>(
  settings: S,
  spec: PairedBenchSpec<Op>,
  progress: (message: string) => void,
): Promise<PairedBenchResult<Op, Omit<S, "databaseUrl">>> {
  const startedAt = new Date().toISOString();
  const database = await createDatabase(
    settings.databaseUrl,
    `hatch_bench_${spec.name}_${Date.now().toString(36)}_${process.pid}`,
  );
  const blobDir = mkdtempSync(join(tmpdir(), `hatch-bench-${spec.name}-`));
  try {
    const { appId } = await spec.seed(database.url, blobDir);
    const seeded: SeededBench = { databaseUrl: database.url, blobDir, appId, secret: randomBytes(32).toString("hex") };
    const runs: PairedRun<Op>[] = [];
    for (const op of spec.ops) {
      for (const clients of spec.levels) {
        const measure = (which: "baseline" | "host") => {
          const env = {
            ...process.env,
            ...spec.childEnv(which, op, seeded),
            PORT: String(freePort()),
            DATABASE_URL: seeded.databaseUrl,
            BLOB_DIR: seeded.blobDir,
          };
          return loadChildServer(spec.scripts[which], env, spec.request?.(op) ?? {}, clients, settings);
        };
        const paired = await pairedRuns(measure, (which, stats) => {
          progress(
            `${spec.name} ${op} x${clients} (${which === "baseline" ? spec.baselineName : "app host"}): ${stats.callsPerSecond} req/s, p50 ${stats.p50Ms} ms, ${stats.errors} errors`,
          );
          if (stats.firstError) progress(`  first error: ${stats.firstError}`);
        });
        runs.push({ op, clients, ...paired });
      }
    }
    const { databaseUrl: _, ...shown } = settings;
    return {
      startedAt,
      machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? "unknown", bun: Bun.version },
      settings: shown,
      runs,
      goals: spec.goals.map((goal) => {
        const run = runs.find((r) => r.op === goal.op && r.clients === goal.clients);
        const value = (goal.kind === "rate" ? run?.host.callsPerSecond : run?.ratio) ?? null;
        return { name: goal.name, value, limit: goal.limit, met: value === null ? null : value >= goal.limit };
      }),
    };
  } finally {
    await database.drop();
    rmSync(blobDir, { recursive: true, force: true });
  }
}

const fmt = (value: number | undefined | null, digits: number) =>
  value === undefined || value === null || !Number.isFinite(value) ? "n/a" : value.toFixed(digits);

/**
 * The report of a paired bench: a header line, what the ops and sides are, the table ((b) is the baseline's letter),
 * the goal's verdict and notes.
 */
export function formatPaired<Op extends string>(
  result: PairedBenchResult<Op, AppBenchSettings>,
  text: { title: string; letter: string; baselineColumn: string; legend: string },
): string {
  const b = `(${text.letter})`;
  const rows = [
    [
      "op",
      "conns",
      `${b} ${text.baselineColumn} req/s`,
      "(h) app host req/s",
      `(h)/${b}`,
      "(h) p50 ms",
      "(h) p99 ms",
      "(h) errors",
      "(h) server CPU us/req",
    ],
  ];
  for (const run of result.runs) {
    const cpu =
      run.host.cpuSeconds?.server !== undefined && run.host.calls > 0
        ? fmt((run.host.cpuSeconds.server * 1e6) / run.host.calls, 1)
        : "n/a";
    rows.push([
      run.op,
      String(run.clients),
      fmt(run.baseline.callsPerSecond, 0),
      fmt(run.host.callsPerSecond, 0),
      fmt(run.ratio, 2),
      fmt(run.host.p50Ms, 3),
      fmt(run.host.p99Ms, 3),
      String(run.host.errors),
      cpu,
    ]);
  }
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => row[col]!.length)));
  const table = rows
    .map((row) =>
      row.map((cell, col) => (col < 1 ? cell.padEnd(widths[col]!) : cell.padStart(widths[col]!))).join("  "),
    )
    .join("\n");
  const errors = result.runs.flatMap((run) =>
    [run.baseline, run.host]
      .filter((r) => r.errors > 0)
      .map((r) => `${run.op} x${run.clients}: ${r.errors} failed (first: ${r.firstError})`),
  );
  const order = `${text.letter} h h ${text.letter}`;
  return [
    `${text.title}: ${result.machine.cpus} CPUs (${result.machine.cpuModel}), Bun ${result.machine.bun}; ${result.settings.seconds} s measured per run after ${result.settings.warmupSeconds} s warmup; best of 2 runs each (order ${order})`,
    text.legend,
    "",
    table,
    "",
    ...result.goals.map((goal) => {
      const verdict = goal.met === null ? "NOT MEASURED" : goal.met ? "MET" : "NOT MET";
      const digits = (goal.limit ?? 0) < 10 ? 2 : 0;
      return `${verdict.padEnd(12)}  ${goal.name}: ${fmt(goal.value, digits)} (limit ${fmt(goal.limit, digits)})`;
    }),
    ...errors.map((line) => `note: ${line}`),
    ...(cpus().length <= 2 ? ["note: the load generator and Postgres share the CPUs with the server under test"] : []),
  ].join("\n");
}
