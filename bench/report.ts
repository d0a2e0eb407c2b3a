import type { RunStats } from "./load.ts";
import type { Floor } from "./nats-floor.ts";
import type { Era } from "./load-worker.ts";
import { TARGETS, type TargetKey } from "./targets.ts";

export const LEVELS = [1, 32] as const;
export const THROUGHPUT_GOAL = 1_500;
/** (c) at 32 clients against (a) of the same era at 32 clients, calls/s. */
export const THROUGHPUT_GOAL_RATIO = 0.6;
/** (c)'s p50 at 1 client may be at most this many ms above (a)'s of the same era. */
export const ADDED_P50_GOAL_MS = 0.5;

/**
 * A row of the report: each deployment with the 2025-11-25 client (SDK v1, a session per client) and the 2026-07-28
 * client (SDK v2, stateless). (b) and (c) serve both eras on the same running deployment; (a) is a bare server per era
 * (the SDK v1 server with sessions for 2025, the SDK v2 stateless handler for 2026).
 */
export type RowKey = "a2025" | "a2026" | "b2025" | "b2026" | "c2025" | "c2026";
export const ROWS: Record<RowKey, { target: TargetKey; era: Era; label: string }> = {
  a2025: { target: "a", era: "2025", label: "(a) baseline 2025" },
  a2026: { target: "a", era: "2026", label: "(a) baseline 2026" },
  b2025: { target: "b", era: "2025", label: "(b) embedded 2025" },
  b2026: { target: "b", era: "2026", label: "(b) embedded 2026" },
  c2025: { target: "c", era: "2025", label: "(c) cluster 2025" },
  c2026: { target: "c", era: "2026", label: "(c) cluster 2026" },
};
export type ComparedKey = "b2025" | "b2026" | "c2025" | "c2026";
const COMPARED: readonly ComparedKey[] = ["b2025", "b2026", "c2025", "c2026"];

/** The row a compared row is measured against: (a) of its own era, driven by the same client. */
export function baselineOf(key: RowKey): RowKey {
  return `a${ROWS[key].era}`;
}

/**
 * Across eras, never a goal: (c) 2026 against (a) 2025 was the issue's first comparison, but the 2026 client spends
 * more load-generator CPU per call than the 2025 client on the same CPUs, so it measures the client as well as the
 * gateway and the bus. (a) 2026 against (a) 2025 is that era change alone, on the bare servers.
 */
export const CROSS_ERA = {
  "c2026/a2025": { row: "c2026", against: "a2025" },
  "a2026/a2025": { row: "a2026", against: "a2025" },
} as const satisfies Record<string, { row: RowKey; against: RowKey }>;
export type CrossEraKey = keyof typeof CROSS_ERA;

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
  targets: Partial<Record<RowKey, TargetResult>>;
  /** Each of (b) and (c), per era, against (a) of the same era in the same run. */
  ratios: Partial<Record<ComparedKey, Ratios>>;
  /** Across eras (CROSS_ERA), kept in view; no goal reads them. */
  crossEra: Partial<Record<CrossEraKey, Ratios>>;
  goals: Goal[];
  /**
   * The machine's floor for the hop (c) adds, measured in the same run (bench/nats-floor.ts, 1 client): sequential
   * 700-byte round trips between two processes, directly over TCP, through nats-server (raw protocol) and through
   * Hatch's bus. Only when (c) ran.
   */
  floor?: Record<"tcp" | "nats" | "bus", Floor>;
  notes: string[];
}

function ratio(x: number | undefined, a: number | undefined): number | null {
  if (x === undefined || a === undefined || !Number.isFinite(x) || !Number.isFinite(a) || a === 0) return null;
  return Math.round((x / a) * 100) / 100;
}

export function allRatios(targets: BenchReport["targets"]): BenchReport["ratios"] {
  const out: BenchReport["ratios"] = {};
  for (const key of COMPARED) if (targets[key]) out[key] = ratiosOf(targets, key, baselineOf(key));
  return out;
}

export function crossEraRatios(targets: BenchReport["targets"]): BenchReport["crossEra"] {
  const out: BenchReport["crossEra"] = {};
  for (const [key, { row, against }] of Object.entries(CROSS_ERA) as [CrossEraKey, { row: RowKey; against: RowKey }][])
    if (targets[row] && targets[against]) out[key] = ratiosOf(targets, row, against);
  return out;
}

/** `key`'s figures over `against`'s, at each level. */
export function ratiosOf(targets: BenchReport["targets"], key: RowKey, against: RowKey): Ratios {
  const x = targets[key]?.runs;
  const a = targets[against]?.runs;
  return {
    callsPerSecondAt1: ratio(x?.["1"]?.callsPerSecond, a?.["1"]?.callsPerSecond),
    callsPerSecondAt32: ratio(x?.["32"]?.callsPerSecond, a?.["32"]?.callsPerSecond),
    p50At1: ratio(x?.["1"]?.p50Ms, a?.["1"]?.p50Ms),
    p50At32: ratio(x?.["32"]?.p50Ms, a?.["32"]?.p50Ms),
  };
}

/** p50 at 1 client of `key` minus that of (a) of its era, in ms (null when either did not run). */
function addedP50(targets: BenchReport["targets"], key: RowKey): number | null {
  const c1 = targets[key]?.runs["1"]?.p50Ms;
  const a1 = targets[baselineOf(key)]?.runs["1"]?.p50Ms;
  return c1 === undefined || a1 === undefined ? null : Math.round((c1 - a1) * 1000) / 1000;
}

/**
 * The issue's goals for the cluster, per era, each against (a) of the same era: calls/s at 32 clients (absolute and
 * against (a)), p50 added at 1 client.
 */
export function goalsOf(targets: BenchReport["targets"]): Goal[] {
  const goals: Goal[] = [];
  for (const key of ["c2025", "c2026"] as const) {
    const label = ROWS[key].label;
    const base = baselineOf(key);
    const baseLabel = ROWS[base].label;
    const a32 = targets[base]?.runs["32"]?.callsPerSecond ?? null;
    const c32 = targets[key]?.runs["32"]?.callsPerSecond ?? null;
    const ratioLimit = a32 === null ? null : Math.round(a32 * THROUGHPUT_GOAL_RATIO * 10) / 10;
    const added = addedP50(targets, key);
    goals.push(
      {
        name: `${label} calls/s at 32 clients >= ${THROUGHPUT_GOAL}`,
        value: c32,
        limit: THROUGHPUT_GOAL,
        met: c32 === null ? null : c32 >= THROUGHPUT_GOAL,
      },
      {
        name: `${label} calls/s at 32 clients >= ${THROUGHPUT_GOAL_RATIO} x ${baseLabel} at 32 clients`,
        value: c32,
        limit: ratioLimit,
        met: c32 === null || ratioLimit === null ? null : c32 >= ratioLimit,
      },
      {
        name: `${label} p50 at 1 client minus ${baseLabel} p50 at 1 client, ms, <= ${ADDED_P50_GOAL_MS}`,
        value: added,
        limit: ADDED_P50_GOAL_MS,
        met: added === null ? null : added <= ADDED_P50_GOAL_MS,
      },
    );
  }
  return goals;
}

const fmt = (value: number | null | undefined, digits: number) =>
  value === null || value === undefined || !Number.isFinite(value) ? "n/a" : value.toFixed(digits);

function ratioRow(name: string, r: Ratios): string[] {
  return [name, fmt(r.callsPerSecondAt1, 2), fmt(r.callsPerSecondAt32, 2), fmt(r.p50At1, 2), fmt(r.p50At32, 2)];
}

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
  for (const [key, result] of Object.entries(report.targets) as [RowKey, TargetResult][]) {
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
        ROWS[key].label,
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
  const shown = new Set((Object.keys(report.targets) as RowKey[]).map((key) => ROWS[key].target));
  for (const key of shown) lines.push(`${TARGETS[key].label}: ${TARGETS[key].description}`);
  lines.push(
    "2025: the SDK v1 client, protocol 2025-11-25, a session per client; 2026: the SDK v2 client pinned to 2026-07-28, stateless",
  );
  lines.push("");
  const rows = [["target", "clients", "calls/s", "p50 ms", "p99 ms", "mean ms", "calls", "errors", "answers"]];
  for (const [key, result] of Object.entries(report.targets) as [RowKey, TargetResult][]) {
    for (const level of LEVELS) {
      const run = result.runs[String(level)];
      rows.push([
        ROWS[key].label,
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
  const ratioRows = [["ratio (same era)", "calls/s @1", "calls/s @32", "p50 @1", "p50 @32"]];
  for (const key of COMPARED) {
    const r = report.ratios[key];
    if (r) ratioRows.push(ratioRow(`${ROWS[key].label} / ${ROWS[baselineOf(key)].label}`, r));
  }
  if (ratioRows.length > 1) {
    lines.push(
      "",
      table(ratioRows),
      "(each against the baseline of its own era, driven by the same client; calls/s ratio: higher is better, 1.00 = as fast",
      "as the baseline; p50 ratio: lower is better)",
    );
  }
  const crossRows = [["ratio (across eras)", "calls/s @1", "calls/s @32", "p50 @1", "p50 @32"]];
  for (const [key, { row, against }] of Object.entries(CROSS_ERA) as [
    CrossEraKey,
    { row: RowKey; against: RowKey },
  ][]) {
    const r = report.crossEra[key];
    if (r) crossRows.push(ratioRow(`${ROWS[row].label} / ${ROWS[against].label}`, r));
  }
  if (crossRows.length > 1) {
    lines.push(
      "",
      table(crossRows),
      "(no goal reads these: the 2026 client spends more load-generator CPU per call than the 2025 client, CPU the servers",
      "lack on the same CPUs, so (c) 2026 / (a) 2025 measures the client as well as the gateway and the bus; (a) 2026 /",
      "(a) 2025 is the whole era change, client, protocol and server SDK, on the bare servers)",
    );
  }
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
  const floor = floorText(report);
  if (floor) lines.push("", ...floor);
  for (const note of report.notes) lines.push(`note: ${note}`);
  return lines.join("\n");
}

/**
 * The floor beside the added p50: (c)'s path has one bus round trip (gateway → NATS → orgs → NATS → gateway) that
 * (a)'s does not, so that round trip between two idle processes is what (c) adds before any of Hatch's own work.
 */
function floorText(report: BenchReport): string[] | null {
  const floor = report.floor;
  if (!floor) return null;
  const lines = [
    `floor at 1 client, this run (bench/nats-floor.ts): sequential 700-byte round trips between two processes, p50 ${floor.tcp.p50} µs`,
    `directly over TCP, ${floor.nats.p50} µs through nats-server (raw protocol), ${floor.bus.p50} µs through Hatch's bus (nats.js)`,
  ];
  for (const key of COMPARED) {
    if (ROWS[key].target !== "c") continue;
    const added = addedP50(report.targets, key);
    if (added === null) continue;
    lines.push(
      `${ROWS[key].label}: added p50 at 1 client ${fmt(added, 2)} ms, of which ${fmt(floor.bus.p50 / 1000, 2)} ms is the bus round trip's floor`,
    );
  }
  return lines;
}
