// The app host against nginx and bare Bun: the same ~2 KB index.html served by (n) nginx with one worker, (s) a bare
// `Bun.serve` static file server and (h) the apps service's app host (routing by Host, cached app and file map,
// visibility, ETag and cache headers, open counting), each alone on the machine in turn, at 32 concurrent
// keep-alive connections; with the bench's own load worker and, when installed, wrk.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { Child, freePort } from "./children.ts";
import { runLoad, type RunStats } from "./load.ts";
import type { Goal } from "./report.ts";

export const APP_HOST_CLIENTS = 32;
/** The issue's goal: the app host at least this fraction of nginx's req/s. */
export const APP_HOST_GOAL_RATIO = 0.9;

type ServerKey = "s" | "n" | "h";
const SCRIPTS: Record<ServerKey, string> = { s: "static-server.ts", n: "nginx-server.ts", h: "app-host-server.ts" };
const LABELS: Record<ServerKey, string> = { s: "bare Bun", n: "nginx", h: "app host" };

/** One run of a server: the load worker's figures, and wrk's req/s on the same server right after (null: no wrk). */
export interface ServerRun extends RunStats {
  wrkRequestsPerSecond: number | null;
}

export interface AppHostResult {
  startedAt: string;
  machine: { cpus: number; cpuModel: string; bun: string };
  settings: AppHostSettings & { clients: number };
  description: string;
  fileBytes: number;
  /** Bare Bun.serve static file server. */
  bare: ServerRun;
  /** nginx, one worker; null when nginx is not installed. */
  nginx: ServerRun | null;
  /** The apps service's app host. */
  host: ServerRun;
  /** host requests/s over bare requests/s. */
  ratio: number | null;
  /** host requests/s over nginx's (the load worker's, and wrk's when installed). */
  ratioNginx: number | null;
  ratioNginxWrk: number | null;
  /** req/s of every run, in the order measured; `bare`, `nginx` and `host` are the better of each. */
  allRuns: { bare: number[]; nginx: number[]; host: number[] };
  /** The 1-, 5- and 15-minute load averages before and after (`uptime`): other work on the shared machine. */
  load: { before: number[]; after: number[] };
  goal: Goal;
  notes: string[];
}

export interface AppHostSettings {
  seconds: number;
  warmupSeconds: number;
  workers: number;
}

const DESCRIPTION = `GET / of a public app's ~2 KB index.html at ${APP_HOST_CLIENTS} keep-alive connections: (n) nginx with worker_processes 1, (s) bare Bun.serve returning Bun.file, (h) the app host; best of 2 runs each (order s n h h n s)`;

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

async function measureOne(key: ServerKey, file: string, settings: AppHostSettings): Promise<ServerRun> {
  const script = SCRIPTS[key];
  const child = new Child(script.replace(/\.ts$/, ""), [process.execPath, join(import.meta.dir, script)], {
    ...process.env,
    PORT: String(freePort()),
    BENCH_FILE: file,
  });
  try {
    const ready = JSON.parse(await child.waitFor("READY", 60_000)) as { url: string; host: string };
    const stats = await runLoad({
      mcpUrl: "",
      http: ready,
      clients: APP_HOST_CLIENTS,
      workers: settings.workers,
      warmupMs: settings.warmupSeconds * 1000,
      durationMs: settings.seconds * 1000,
      cpuGroups: [{ name: "server", roots: [child.proc.pid] }],
    });
    return { ...stats, wrkRequestsPerSecond: await runWrk(ready, settings.seconds) };
  } finally {
    await child.stop();
  }
}

/** wrk (one thread, the same connections) against the server for `seconds`: its req/s, or null without wrk. */
async function runWrk(target: { url: string; host: string }, seconds: number): Promise<number | null> {
  const wrk = Bun.which("wrk");
  if (!wrk) return null;
  const proc = Bun.spawn(
    [
      wrk,
      "-t1",
      `-c${APP_HOST_CLIENTS}`,
      `-d${Math.max(1, Math.round(seconds))}s`,
      "-H",
      `Host: ${target.host}`,
      target.url,
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  const match = /Requests\/sec:\s+([\d.]+)/.exec(out);
  const errors = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  if (!match || errors) return null;
  return Math.round(Number(match[1]));
}

const nginxInstalled = () => Bun.which("nginx") !== null || Bun.file("/usr/sbin/nginx").size > 0;

export async function measureAppHost(
  settings: AppHostSettings,
  progress: (message: string) => void,
): Promise<AppHostResult> {
  const startedAt = new Date().toISOString();
  const dir = mkdtempSync(join(tmpdir(), "hatch-bench-static-"));
  const loadBefore = loadavg().map((v) => Math.round(v * 100) / 100);
  try {
    const file = join(dir, "index.html");
    const html = indexHtml();
    writeFileSync(file, html);
    // Two runs each in the order s, n, h, h, n, s, so a slow drift of the machine (other work starting or ending)
    // weighs on all alike; each server's better run counts.
    const withNginx = nginxInstalled();
    if (!withNginx)
      progress("app host: nginx is not installed (apt-get install nginx); measuring against bare Bun only");
    const order: ServerKey[] = withNginx ? ["s", "n", "h", "h", "n", "s"] : ["s", "h", "h", "s"];
    const runs: Record<ServerKey, ServerRun[]> = { s: [], n: [], h: [] };
    for (const key of order) {
      const stats = await measureOne(key, file, settings);
      runs[key].push(stats);
      progress(
        `app host (${key}) ${LABELS[key]}: ${stats.callsPerSecond} req/s, p50 ${stats.p50Ms} ms, ${stats.errors} errors${stats.wrkRequestsPerSecond === null ? "" : `; wrk ${stats.wrkRequestsPerSecond} req/s`}`,
      );
      if (stats.firstError) progress(`  first error: ${stats.firstError}`);
    }
    const best = (list: ServerRun[]) => list.reduce((a, b) => (b.callsPerSecond > a.callsPerSecond ? b : a));
    const bestWrk = (list: ServerRun[]) =>
      list.reduce<number | null>(
        (a, b) => ((b.wrkRequestsPerSecond ?? 0) > (a ?? 0) ? b.wrkRequestsPerSecond : a),
        null,
      );
    const ratioOf = (a: number | null, b: number | null) =>
      a !== null && b !== null && b > 0 ? Math.round((a / b) * 100) / 100 : null;
    const bare = best(runs.s);
    const nginx = runs.n.length > 0 ? best(runs.n) : null;
    const host = best(runs.h);
    const ratio = ratioOf(host.callsPerSecond, bare.callsPerSecond);
    const ratioNginx = nginx ? ratioOf(host.callsPerSecond, nginx.callsPerSecond) : null;
    const ratioNginxWrk = nginx ? ratioOf(bestWrk(runs.h), bestWrk(runs.n)) : null;
    return {
      startedAt,
      machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? "unknown", bun: Bun.version },
      settings: { ...settings, clients: APP_HOST_CLIENTS },
      description: DESCRIPTION,
      fileBytes: Buffer.byteLength(html),
      bare,
      nginx,
      host,
      ratio,
      ratioNginx,
      ratioNginxWrk,
      allRuns: {
        bare: runs.s.map((r) => r.callsPerSecond),
        nginx: runs.n.map((r) => r.callsPerSecond),
        host: runs.h.map((r) => r.callsPerSecond),
      },
      load: { before: loadBefore, after: loadavg().map((v) => Math.round(v * 100) / 100) },
      goal: appHostGoal(ratioNginx),
      notes: notesOf({ "(s) bare Bun": bare, ...(nginx ? { "(n) nginx": nginx } : {}), "(h) app host": host }),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function appHostGoal(value: number | null): Goal {
  return {
    name: `app host req/s >= ${APP_HOST_GOAL_RATIO} x nginx (one worker) at ${APP_HOST_CLIENTS} connections`,
    value,
    limit: APP_HOST_GOAL_RATIO,
    met: value === null ? null : value >= APP_HOST_GOAL_RATIO,
  };
}

const fmt = (value: number | undefined, digits: number) =>
  value === undefined || !Number.isFinite(value) ? "n/a" : value.toFixed(digits);

export function formatAppHost(result: AppHostResult): string {
  const rows = [
    [
      "server",
      "req/s",
      "p50 ms",
      "p99 ms",
      "requests",
      "errors",
      "server CPU us/req",
      "load gen CPU us/req",
      "wrk req/s",
    ],
  ];
  for (const [label, run] of [
    ["(n) nginx, 1 worker", result.nginx],
    ["(s) bare Bun.serve", result.bare],
    ["(h) app host", result.host],
  ] as const) {
    if (!run) continue;
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
      run.wrkRequestsPerSecond === null ? "n/a" : String(run.wrkRequestsPerSecond),
    ]);
  }
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => row[col]!.length)));
  const table = rows
    .map((row) =>
      row.map((cell, col) => (col === 0 ? cell.padEnd(widths[col]!) : cell.padStart(widths[col]!))).join("  "),
    )
    .join("\n");
  const all = `all runs, req/s: (n) ${result.allRuns.nginx.map((v) => fmt(v, 0)).join(", ") || "not installed"}; (s) ${result.allRuns.bare.map((v) => fmt(v, 0)).join(", ")}; (h) ${result.allRuns.host.map((v) => fmt(v, 0)).join(", ")}`;
  const ratio = (value: number | null) => (value === null ? "n/a" : value.toFixed(2));
  const verdict = result.goal.met === null ? "NOT MEASURED" : result.goal.met ? "MET" : "NOT MET";
  return [
    `App host benchmark: ${result.machine.cpus} CPUs (${result.machine.cpuModel}), Bun ${result.machine.bun}; ${result.settings.seconds} s measured per run after ${result.settings.warmupSeconds} s warmup`,
    `${result.description}; index.html is ${result.fileBytes} bytes`,
    "",
    table,
    all,
    `(h)/(n) req/s: ${ratio(result.ratioNginx)} (wrk: ${ratio(result.ratioNginxWrk)}); (h)/(s) req/s: ${ratio(result.ratio)}`,
    `load average (uptime) before ${result.load.before.join(", ")}, after ${result.load.after.join(", ")}`,
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
