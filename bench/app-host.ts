// The app host against bare Bun: the same ~2 KB index.html served by (s) a bare `Bun.serve` static file server
// and (h) the apps service's app host (routing by Host, cached app and file map, visibility, ETag and cache
// headers, open counting), each alone on the machine in turn, at 32 concurrent keep-alive connections.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { Child, freePort } from "./children.ts";
import { runLoad, type RunStats } from "./load.ts";
import type { Goal } from "./report.ts";

export const APP_HOST_CLIENTS = 32;
export const APP_HOST_GOAL_RATIO = 0.7;

export interface AppHostResult {
  startedAt: string;
  machine: { cpus: number; cpuModel: string; bun: string };
  settings: AppHostSettings & { clients: number };
  description: string;
  fileBytes: number;
  /** Bare Bun.serve static file server. */
  bare: RunStats;
  /** The apps service's app host. */
  host: RunStats;
  /** host requests/s over bare requests/s. */
  ratio: number | null;
  /** req/s of every run, in the order measured; `bare` and `host` are the better of each. */
  allRuns: { bare: number[]; host: number[] };
  goal: Goal;
  notes: string[];
}

export interface AppHostSettings {
  seconds: number;
  warmupSeconds: number;
  workers: number;
}

const DESCRIPTION = `GET / of a public app's ~2 KB index.html at ${APP_HOST_CLIENTS} keep-alive connections: (s) bare Bun.serve returning Bun.file, (h) the app host; best of 2 runs each (order s h h s)`;

/** A Vite-like index.html of about 2 KB. */
function indexHtml(): string {
  const head = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="UTF-8" />
    <link rel="icon" type="image/svg+xml" href="/vite.svg" />
    <meta name="viewport" content="width=device-width, initial-scale=1.0" />
    <title>Team notes</title>
    <script type="module" crossorigin src="/assets/index-B1a2C3d4.js"></script>
    <link rel="stylesheet" crossorigin href="/assets/index-Dx7Yw6Vu.css">
  </head>
  <body>
    <div id="app">`;
  const tail = `</div>
  </body>
</html>
`;
  let body = "";
  for (let i = 1; body.length + head.length + tail.length < 2_000; i++)
    body += `\n      <p class="note">Note ${i}: loading the team's notes, please wait a moment.</p>`;
  return head + body + tail;
}

async function measureOne(script: string, file: string, settings: AppHostSettings): Promise<RunStats> {
  const child = new Child(script.replace(/\.ts$/, ""), [process.execPath, join(import.meta.dir, script)], {
    ...process.env,
    PORT: String(freePort()),
    BENCH_FILE: file,
  });
  try {
    const ready = JSON.parse(await child.waitFor("READY", 60_000)) as { url: string; host: string };
    return await runLoad({
      mcpUrl: "",
      http: ready,
      clients: APP_HOST_CLIENTS,
      workers: settings.workers,
      warmupMs: settings.warmupSeconds * 1000,
      durationMs: settings.seconds * 1000,
      cpuGroups: [{ name: "server", roots: [child.proc.pid] }],
    });
  } finally {
    await child.stop();
  }
}

export async function measureAppHost(
  settings: AppHostSettings,
  progress: (message: string) => void,
): Promise<AppHostResult> {
  const startedAt = new Date().toISOString();
  const dir = mkdtempSync(join(tmpdir(), "hatch-bench-static-"));
  try {
    const file = join(dir, "index.html");
    const html = indexHtml();
    writeFileSync(file, html);
    // Two runs each in the order s, h, h, s, so a slow drift of the machine (other work starting or ending) weighs
    // on both alike; each server's better run counts.
    const runs: Record<"s" | "h", RunStats[]> = { s: [], h: [] };
    for (const key of ["s", "h", "h", "s"] as const) {
      const stats = await measureOne(key === "s" ? "static-server.ts" : "app-host-server.ts", file, settings);
      runs[key].push(stats);
      progress(
        `app host (${key}) ${key === "s" ? "bare Bun" : "app host"}: ${stats.callsPerSecond} req/s, p50 ${stats.p50Ms} ms, ${stats.errors} errors`,
      );
      if (stats.firstError) progress(`  first error: ${stats.firstError}`);
    }
    const best = (list: RunStats[]) => list.reduce((a, b) => (b.callsPerSecond > a.callsPerSecond ? b : a));
    const bare = best(runs.s);
    const host = best(runs.h);
    const ratio = bare.callsPerSecond > 0 ? Math.round((host.callsPerSecond / bare.callsPerSecond) * 100) / 100 : null;
    return {
      startedAt,
      machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? "unknown", bun: Bun.version },
      settings: { ...settings, clients: APP_HOST_CLIENTS },
      description: DESCRIPTION,
      fileBytes: Buffer.byteLength(html),
      bare,
      host,
      ratio,
      allRuns: { bare: runs.s.map((r) => r.callsPerSecond), host: runs.h.map((r) => r.callsPerSecond) },
      goal: appHostGoal(ratio),
      notes: notesOf({ "(s) bare Bun": bare, "(h) app host": host }),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function appHostGoal(value: number | null): Goal {
  return {
    name: `app host req/s >= ${APP_HOST_GOAL_RATIO} x bare Bun.serve at ${APP_HOST_CLIENTS} connections`,
    value,
    limit: APP_HOST_GOAL_RATIO,
    met: value === null ? null : value >= APP_HOST_GOAL_RATIO,
  };
}

const fmt = (value: number | undefined, digits: number) =>
  value === undefined || !Number.isFinite(value) ? "n/a" : value.toFixed(digits);

export function formatAppHost(result: AppHostResult): string {
  const rows = [
    ["server", "req/s", "p50 ms", "p99 ms", "requests", "errors", "server CPU us/req", "load gen CPU us/req"],
  ];
  for (const [label, run] of [
    ["(s) bare Bun.serve", result.bare],
    ["(h) app host", result.host],
  ] as const) {
    const perRequest = (name: string) =>
      run.cpuSeconds?.[name] !== undefined && run.calls > 0 ? fmt((run.cpuSeconds[name]! * 1e6) / run.calls, 1) : "n/a";
    rows.push([
      label,
      fmt(run.callsPerSecond, 0),
      fmt(run.p50Ms, 3),
      fmt(run.p99Ms, 3),
      String(run.calls),
      String(run.errors),
      perRequest("server"),
      perRequest("load"),
    ]);
  }
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => row[col]!.length)));
  const table = rows
    .map((row) =>
      row.map((cell, col) => (col === 0 ? cell.padEnd(widths[col]!) : cell.padStart(widths[col]!))).join("  "),
    )
    .join("\n");
  const all = `all runs, req/s: (s) ${result.allRuns.bare.map((v) => fmt(v, 0)).join(", ")}; (h) ${result.allRuns.host.map((v) => fmt(v, 0)).join(", ")}`;
  const verdict = result.goal.met === null ? "NOT MEASURED" : result.goal.met ? "MET" : "NOT MET";
  return [
    `App host benchmark: ${result.machine.cpus} CPUs (${result.machine.cpuModel}), Bun ${result.machine.bun}; ${result.settings.seconds} s measured per run after ${result.settings.warmupSeconds} s warmup`,
    `${result.description}; index.html is ${result.fileBytes} bytes`,
    "",
    table,
    all,
    `(h)/(s) req/s: ${result.ratio === null ? "n/a" : result.ratio.toFixed(2)}`,
    "",
    `${verdict.padEnd(12)}  ${result.goal.name}: ${fmt(result.goal.value ?? undefined, 2)} (limit ${fmt(result.goal.limit ?? undefined, 2)})`,
    ...result.notes.map((note) => `note: ${note}`),
  ].join("\n");
}

/** Errors, a CPU-bound load generator, and other work on the machine during a counted run. */
function notesOf(runs: Record<string, RunStats>): string[] {
  const notes: string[] = [];
  for (const [label, run] of Object.entries(runs)) {
    if (run.errors > 0)
      notes.push(
        `${label}: ${run.errors} requests failed (first: ${run.firstError}); they are not in req/s or latency`,
      );
    const busy = (run.cpuSeconds?.load ?? 0) / (run.seconds * run.workers);
    if (busy > 0.9)
      notes.push(
        `${label}: the load generator used ${Math.round(busy * 100)}% of a CPU and may have limited the result; try BENCH_WORKERS=${run.workers + 1}`,
      );
    const { machine, steal = 0, ...ours } = run.cpuSeconds ?? {};
    if (machine === undefined) continue;
    const others =
      (Math.max(0, machine - Object.values(ours).reduce((a, b) => a + b, 0)) + steal) / (run.seconds * cpus().length);
    if (others > 0.1)
      notes.push(
        `${label}: processes outside the benchmark (or the VM host) took ${Math.round(others * 100)}% of the CPUs; its numbers are low`,
      );
  }
  if (cpus().length <= 2) notes.push("the load generator shares the CPUs with the server under test");
  return notes;
}
