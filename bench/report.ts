import type { RunStats } from "./load.ts";
import { TARGETS, type TargetKey } from "./targets.ts";

export const LEVELS = [1, 32] as const;
export const THROUGHPUT_GOAL = 1_500;
export const LATENCY_GOAL_RATIO = 1.5;

export interface TargetResult {
  label: string;
  description: string;
  details: Record<string, unknown>;
  /** Keyed by the number of concurrent clients. */
  runs: Record<string, RunStats>;
}

export interface Ratios {
  callsPerSecondAt1: number | null;
  callsPerSecondAt32: number | null;
  p50At1: number | null;
  p50At32: number | null;
}

export interface Goal {
  name: string;
  value: number | null;
  limit: number | null;
  met: boolean | null;
}

export interface BenchReport {
  startedAt: string;
  finishedAt: string;
  machine: { cpus: number; cpuModel: string; bun: string; platform: string };
  settings: Record<string, unknown>;
  targets: Partial<Record<TargetKey, TargetResult>>;
  ratios: { "b/a": Ratios; "c/a": Ratios };
  goals: Goal[];
  notes: string[];
}

function ratio(x: number | undefined, a: number | undefined): number | null {
  if (x === undefined || a === undefined || !Number.isFinite(x) || !Number.isFinite(a) || a === 0) return null;
  return Math.round((x / a) * 100) / 100;
}

export function ratiosOf(targets: BenchReport["targets"], key: "b" | "c"): Ratios {
  const x = targets[key]?.runs;
  const a = targets.a?.runs;
  return {
    callsPerSecondAt1: ratio(x?.["1"]?.callsPerSecond, a?.["1"]?.callsPerSecond),
    callsPerSecondAt32: ratio(x?.["32"]?.callsPerSecond, a?.["32"]?.callsPerSecond),
    p50At1: ratio(x?.["1"]?.p50Ms, a?.["1"]?.p50Ms),
    p50At32: ratio(x?.["32"]?.p50Ms, a?.["32"]?.p50Ms),
  };
}

export function goalsOf(targets: BenchReport["targets"]): Goal[] {
  const throughput = targets.c?.runs["32"]?.callsPerSecond ?? null;
  const p50c = targets.c?.runs["1"]?.p50Ms ?? null;
  const p50a = targets.a?.runs["1"]?.p50Ms ?? null;
  const latencyLimit = p50a === null ? null : Math.round(p50a * LATENCY_GOAL_RATIO * 1000) / 1000;
  return [
    {
      name: `(c) calls/s at 32 clients >= ${THROUGHPUT_GOAL}`,
      value: throughput,
      limit: THROUGHPUT_GOAL,
      met: throughput === null ? null : throughput >= THROUGHPUT_GOAL,
    },
    {
      name: `(c) p50 at 1 client <= ${LATENCY_GOAL_RATIO} x (a) p50 at 1 client`,
      value: p50c,
      limit: latencyLimit,
      met: p50c === null || latencyLimit === null ? null : p50c <= latencyLimit,
    },
  ];
}

const fmt = (value: number | null | undefined, digits: number) =>
  value === null || value === undefined || !Number.isFinite(value) ? "n/a" : value.toFixed(digits);

/** Columns right-aligned except those listed in `left` (the first by default). */
function table(rows: string[][], left: number[] = [0]): string {
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => row[col]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, col) => (left.includes(col) ? cell.padEnd(widths[col]!) : cell.padStart(widths[col]!)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

const OTHER_GROUPS = new Set(["load", "postgres", "nats", "machine", "steal"]);

/** Where the CPU went, per call: the load generator, Hatch's processes, Postgres, NATS; and how busy the machine was. */
function cpuTable(report: BenchReport): string | null {
  const rows = [
    [
      "target",
      "clients",
      "load gen",
      "postgres",
      "nats",
      "total",
      "bench busy",
      "others busy",
      "steal",
      "hatch processes",
    ],
  ];
  for (const [key, result] of Object.entries(report.targets) as [TargetKey, TargetResult][]) {
    for (const level of LEVELS) {
      const run = result.runs[String(level)];
      if (!run?.cpuSeconds || run.calls === 0) continue;
      const perCall = (seconds: number) => (seconds * 1000) / run.calls;
      const own = Object.entries(run.cpuSeconds).filter(([name]) => !OTHER_GROUPS.has(name));
      const hatch = own.reduce((sum, [, v]) => sum + v, 0);
      const hatchText =
        own.length > 1
          ? `${fmt(perCall(hatch), 2)} (${own.map(([n, v]) => `${n} ${fmt(perCall(v), 2)}`).join(", ")})`
          : fmt(perCall(hatch), 2);
      const { steal = 0, machine, ...used } = run.cpuSeconds;
      const total = Object.values(used).reduce((a, b) => a + b, 0);
      const share = (seconds: number) => `${fmt((100 * seconds) / (run.seconds * report.machine.cpus), 0)}%`;
      const others = machine === undefined ? "n/a" : share(Math.max(0, machine - total));
      const g = (name: string) => fmt(perCall(run.cpuSeconds![name] ?? 0), 2);
      rows.push([
        TARGETS[key].label,
        String(level),
        g("load"),
        g("postgres"),
        g("nats"),
        fmt(perCall(total), 2),
        share(total),
        others,
        share(steal),
        hatchText,
      ]);
    }
  }
  return rows.length > 1 ? table(rows, [0, 9]) : null;
}

export function formatReport(report: BenchReport): string {
  const s = report.settings;
  const lines: string[] = [];
  lines.push(
    `Hatch whoami benchmark: ${report.machine.cpus} CPUs (${report.machine.cpuModel}), Bun ${report.machine.bun}`,
  );
  lines.push(
    `${s.seconds} s measured per run after ${s.warmupSeconds} s warmup; LOG_LEVEL=${s.logLevel}; 32 clients over ${s.workers} load process(es)`,
  );
  lines.push("");
  for (const key of Object.keys(report.targets) as TargetKey[])
    lines.push(`${TARGETS[key].label}: ${TARGETS[key].description}`);
  lines.push("");
  const rows = [["target", "clients", "calls/s", "p50 ms", "p99 ms", "mean ms", "calls", "errors", "answers"]];
  for (const [key, result] of Object.entries(report.targets) as [TargetKey, TargetResult][]) {
    for (const level of LEVELS) {
      const run = result.runs[String(level)];
      rows.push([
        TARGETS[key].label,
        String(level),
        fmt(run?.callsPerSecond, 0),
        fmt(run?.p50Ms, 2),
        fmt(run?.p99Ms, 2),
        fmt(run?.meanMs, 2),
        String(run?.calls ?? "n/a"),
        String(run?.errors ?? "n/a"),
        run?.answer ?? "n/a",
      ]);
    }
  }
  lines.push(table(rows));
  lines.push("");
  const ratioRows = [["ratio", "calls/s @1", "calls/s @32", "p50 @1", "p50 @32"]];
  for (const key of ["b/a", "c/a"] as const) {
    const r = report.ratios[key];
    ratioRows.push([
      `(${key[0]})/(a)`,
      fmt(r.callsPerSecondAt1, 2),
      fmt(r.callsPerSecondAt32, 2),
      fmt(r.p50At1, 2),
      fmt(r.p50At32, 2),
    ]);
  }
  lines.push(table(ratioRows));
  lines.push("(calls/s ratio: higher is better, 1.00 = as fast as the baseline; p50 ratio: lower is better)");
  const cpu = cpuTable(report);
  if (cpu) {
    lines.push(
      "",
      "CPU ms per call in the measured window, by process. bench busy: these processes' share of all CPUs; others busy: every",
      "other process on the machine; steal: CPU the VM host gave elsewhere. The last two should be near 0%.",
      cpu,
    );
  }
  lines.push("");
  for (const goal of report.goals) {
    const verdict = goal.met === null ? "NOT MEASURED" : goal.met ? "MET" : "NOT MET";
    lines.push(`${verdict.padEnd(12)}  ${goal.name}: ${fmt(goal.value, 2)} (limit ${fmt(goal.limit, 2)})`);
  }
  for (const note of report.notes) lines.push(`note: ${note}`);
  return lines.join("\n");
}
