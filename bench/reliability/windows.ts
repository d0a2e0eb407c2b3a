// A reliability run's time cut into windows, one per fault (and a baseline before them): the calls that started in
// each, what their outcomes were, the integrity check's findings placed in them, and the table printed at the end.
// Shared by `bun run reliability` (run.ts) and its `--scale` form (scale.ts).
import type { Cluster } from "../../scripts/cluster-lib.ts";
import type { CallLog, CallRecord } from "./load.ts";
import { answeredNotImplemented, type Caller } from "./mcp.ts";
import type { Integrity, Problem } from "./verify.ts";

export interface Window {
  fault: string;
  /** Processes that exited on their own during the window (a crash), restarted by the run as an orchestrator would. */
  crashes: string[];
  start: number;
  end: number;
  injectedAt?: number;
  /** When the killed piece was gone (its process reaped): a call that reached it before then was in flight. */
  goneAt?: number;
  restoredAt?: number;
  recoveredAt?: number;
}

export interface WindowFigures {
  fault: string;
  calls: number;
  ok: number;
  failedClear: number;
  failedUnclear: number;
  /** No answer at all (connection refused, session gone with the gateway, 5xx). */
  failedTransport: number;
  /** Calls in flight at the fault (started before the piece was gone) that failed after it. */
  failedInFlight: number;
  hung: number;
  /** Median time of the load's answered calls that started in the window (ms; null when none answered). */
  p50Ms: number | null;
  writesLost: number;
  writesDoubled: number;
  activityLost: number;
  activityDoubled: number;
  /** How long the component was down on purpose (a killed process is started again at once). */
  downMs: number | null;
  /** From the fault to the first successful call that needs the faulted component. */
  recoverMs: number | null;
  /** Examples of unclear answers, for the report. */
  unclear: string[];
  /** The most frequent failure texts in the window, with counts. */
  errors: string[];
  /** Processes that exited by themselves during the window. */
  crashes: string[];
  /** Each hung call: what, by whom, when (seconds after the fault), how long it was waited for. */
  hungCalls: string[];
}

/** The windows of a run: `open` ends the current one and starts the next. */
export class Windows {
  readonly list: Window[] = [];
  open(fault: string): Window {
    const now = Date.now();
    const previous = this.list.at(-1);
    if (previous) previous.end = now;
    const w: Window = { fault, start: now, end: Number.POSITIVE_INFINITY, crashes: [] };
    this.list.push(w);
    return w;
  }
  close() {
    const last = this.list.at(-1);
    if (last) last.end = Date.now();
  }
}

/**
 * A process of the cluster that exits by itself (not killed by the run: `killing` names those) is a crash: noted in
 * the current window and started again, as an orchestrator would. Returns the timer (clearInterval it at the end).
 */
export function watchCrashes(
  cluster: Cluster,
  windows: Windows,
  killing: () => ReadonlySet<string>,
  log: (line: string) => void,
): ReturnType<typeof setInterval> {
  return setInterval(() => {
    for (const [name, child] of cluster.processes) {
      if (killing().has(name) || (child.exitCode === null && child.signalCode === null)) continue;
      const crash = `${name} exited by itself (${child.exitCode ?? child.signalCode})`;
      windows.list.at(-1)?.crashes.push(crash);
      log(`  ${crash}: started again`);
      cluster.respawn(name);
    }
  }, 250);
}

/** A read tool answered by each component, for the recovery probe. */
export const PROBE: Record<string, { tool: string; args: Record<string, unknown> }> = {
  orgs: { tool: "whoami", args: {} },
  apps: { tool: "list_tools", args: {} },
  // The probe user owns no app (custom_domains would be not_found for it): its own bought domains, none, answer ok.
  domains: { tool: "domain_status", args: {} },
  billing: { tool: "billing", args: {} },
  gateway: { tool: "whoami", args: {} },
  nats: { tool: "list_tools", args: {} },
  postgres: { tool: "whoami", args: {} },
};

/** Calls the component's probe tool until it answers; the time of the first answer (undefined past the deadline). */
export async function probeUntilAnswered(
  probe: Caller,
  component: string,
  calls: CallLog,
  deadline: number,
): Promise<number | undefined> {
  const { tool, args } = PROBE[component]!;
  while (Date.now() < deadline) {
    const start = Date.now();
    const outcome = await probe.call(tool, args);
    const answered = outcome.kind === "ok" || answeredNotImplemented(outcome);
    calls.add({
      start,
      end: Date.now(),
      user: "probe",
      op: tool,
      service: component,
      kind: answered ? "ok" : outcome.kind,
      clear: outcome.kind === "tool_error" ? outcome.clear : undefined,
      text: "text" in outcome ? outcome.text.slice(0, 300) : undefined,
    });
    if (answered) return Date.now();
    await Bun.sleep(100);
  }
  return undefined;
}

const failed = (r: CallRecord) => r.kind !== "ok";

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

export function figuresOf(w: Window, calls: CallLog, problems: Problem[]): WindowFigures {
  const mine = calls.records.filter((r) => r.start >= w.start && r.start < w.end);
  const inWindow = problems.filter((p) => p.at !== null && p.at >= w.start && p.at < w.end);
  const count = (kind: Problem["kind"]) => inWindow.filter((p) => p.kind === kind).length;
  const unclear = mine.filter((r) => r.kind === "tool_error" && !r.clear);
  const load = mine.filter((r) => r.user !== "probe" && r.kind === "ok");
  return {
    fault: w.fault,
    calls: mine.length,
    ok: mine.filter((r) => r.kind === "ok").length,
    failedClear: mine.filter((r) => r.kind === "tool_error" && r.clear).length,
    failedUnclear: unclear.length,
    failedTransport: mine.filter((r) => r.kind === "transport").length,
    failedInFlight: w.injectedAt
      ? calls.records.filter((r) => failed(r) && r.start <= (w.goneAt ?? w.injectedAt!) && r.end >= w.injectedAt!)
          .length
      : 0,
    hung: mine.filter((r) => r.kind === "hung").length,
    p50Ms: median(load.map((r) => r.end - r.start)),
    writesLost: count("writeLost"),
    writesDoubled: count("writeDoubled"),
    activityLost: count("activityLost"),
    activityDoubled: count("activityDoubled"),
    downMs: w.injectedAt && w.restoredAt ? w.restoredAt - w.injectedAt : null,
    recoverMs: w.injectedAt && w.recoveredAt ? w.recoveredAt - w.injectedAt : null,
    unclear: [...new Set(unclear.map((r) => `${r.op}: ${r.text}`))].slice(0, 5),
    errors: topErrors(mine),
    crashes: w.crashes,
    hungCalls: mine
      .filter((r) => r.kind === "hung")
      .map(
        (r) =>
          `${r.op} by ${r.user}, started ${((r.start - (w.injectedAt ?? w.start)) / 1000).toFixed(1)} s after the fault, given up after ${((r.end - r.start) / 1000).toFixed(1)} s`,
      ),
  };
}

function topErrors(records: CallRecord[]): string[] {
  const counts = new Map<string, number>();
  for (const r of records) {
    if (r.kind === "ok") continue;
    // Ids and numbers vary from call to call; the rest says what kind of failure it was.
    const key = `${r.op} ${r.kind}: ${(r.text ?? "").replace(/[0-9a-f]{8,}|(?<!HTTP )\b\d+\b/g, "#").slice(0, 160)}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 6)
    .map(([k, n]) => `${n}× ${k}`);
}

export type Totals = ReturnType<typeof totalsOf>;

export function totalsOf(figures: WindowFigures[]) {
  const sum = (key: keyof WindowFigures) => figures.reduce((n, f) => n + ((f[key] as number) ?? 0), 0);
  return {
    calls: sum("calls"),
    ok: sum("ok"),
    failedClear: sum("failedClear"),
    failedUnclear: sum("failedUnclear"),
    failedTransport: sum("failedTransport"),
    hung: sum("hung"),
  };
}

/** Lines of a table: the first column left-aligned, the others right-aligned. */
export function tableLines(head: string[], rows: (string | number)[][]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells: (string | number)[]) =>
    cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]!) : String(c).padStart(widths[i]!))).join("  ");
  return [line(head), ...rows.map(line)];
}

/** The per-window table's head and rows (one per window). */
export function windowTable(figures: WindowFigures[]): { head: string[]; rows: (string | number)[][] } {
  const head = [
    "fault",
    "calls",
    "ok",
    "p50 ms",
    "failed clear",
    "failed unclear",
    "no answer",
    "in flight failed",
    "hung",
    "writes lost/doubled",
    "activity lost/doubled",
    "down s",
    "recover s",
  ];
  const rows = figures.map((f) => [
    f.fault,
    f.calls,
    f.ok,
    f.p50Ms ?? "",
    f.failedClear,
    f.failedUnclear,
    f.failedTransport,
    f.failedInFlight,
    f.hung,
    `${f.writesLost}/${f.writesDoubled}`,
    `${f.activityLost}/${f.activityDoubled}`,
    f.downMs === null ? "" : (f.downMs / 1000).toFixed(1),
    f.recoverMs === null ? "" : (f.recoverMs / 1000).toFixed(1),
  ]);
  return { head, rows };
}

/** The same table in markdown (for a README): text left, numbers right. */
export function markdownLines(head: string[], rows: (string | number)[][]): string[] {
  const md = (cells: (string | number)[]) => `| ${cells.join(" | ")} |`;
  return [md(head), md(head.map((_, i) => (i === 0 ? "---" : "--:"))), ...rows.map(md)];
}

/** The per-window table, the integrity summary, and each window's failures, hung calls and crashes. */
export function printWindows(
  log: (line: string) => void,
  figures: WindowFigures[],
  totals: Totals,
  integrity: Integrity,
): void {
  const { head, rows } = windowTable(figures);
  rows.push([
    "total",
    totals.calls,
    totals.ok,
    "",
    totals.failedClear,
    totals.failedUnclear,
    totals.failedTransport,
    "",
    totals.hung,
    `${integrity.writesLost}/${integrity.writesDoubled}`,
    `${integrity.activityLost}/${integrity.activityDoubled}`,
    "",
    "",
  ]);
  log("");
  for (const line of tableLines(head, rows)) log(line);
  log(
    `acknowledged writes checked: ${integrity.acknowledgedWrites}; committed without an answer: ${integrity.committedWithoutAnswer}`,
  );
  for (const p of integrity.problems.slice(0, 20)) log(`  ${p.kind}: ${p.text}`);
  for (const f of figures)
    for (const e of f.errors) log(`  during ${f.fault}: ${e.replace(/\s+/g, " ").slice(0, 200)}`);
  for (const f of figures) for (const h of f.hungCalls) log(`  HUNG during ${f.fault}: ${h}`);
  for (const f of figures) for (const c of f.crashes) log(`  CRASH during ${f.fault}: ${c}`);
}

/** Integrity findings that fall in no window (no time, or outside the run). */
export function unplacedProblems(problems: Problem[], windows: Window[]): string[] {
  return problems
    .filter((p) => p.at === null || !windows.some((w) => p.at! >= w.start && p.at! < w.end))
    .map((p) => `${p.kind}: ${p.text}`);
}

/** Goals every run holds: no hung call, no lost or doubled write or activity entry, no crash. */
export function commonMisses(totals: Totals, integrity: Integrity, windows: Window[]): string[] {
  const misses: string[] = [];
  if (totals.hung > 0) misses.push(`${totals.hung} calls hung`);
  if (integrity.writesLost + integrity.writesDoubled > 0)
    misses.push(`${integrity.writesLost} writes lost, ${integrity.writesDoubled} doubled`);
  if (integrity.activityLost + integrity.activityDoubled > 0)
    misses.push(`${integrity.activityLost} activity entries lost, ${integrity.activityDoubled} doubled`);
  for (const w of windows) for (const crash of w.crashes) misses.push(`during ${w.fault}: ${crash}`);
  return misses;
}
