// The whoami report's arithmetic and words: each (b)/(c) row against the baseline of its own era, the cross-era
// ratios kept in view apart from the goals. Figures are made up; nothing here is timed.
import { describe, expect, test } from "bun:test";
import type { RunStats } from "./load.ts";
import {
  allRatios,
  crossEraRatios,
  formatReport,
  goalsOf,
  ROWS,
  type BenchReport,
  type RowKey,
  type TargetResult,
} from "./report.ts";

function run(clients: number, callsPerSecond: number, p50Ms: number): RunStats {
  return {
    clients,
    workers: 1,
    seconds: 1,
    calls: callsPerSecond,
    callsPerSecond,
    p50Ms,
    p99Ms: p50Ms * 4,
    meanMs: p50Ms * 1.25,
    maxMs: p50Ms * 8,
    errors: 0,
    answer: "json",
  };
}

function row(key: RowKey, at1: [number, number], at32: [number, number]): TargetResult {
  return {
    label: ROWS[key].label,
    description: "",
    details: { era: ROWS[key].era },
    runs: { "1": run(1, ...at1), "32": run(32, ...at32) },
  };
}

// (a) 2026 is slower than (a) 2025, as the 2026 client is heavier; (c) 2026 is measured against it.
const targets: BenchReport["targets"] = {
  a2025: row("a2025", [1000, 1], [4000, 8]),
  a2026: row("a2026", [800, 1.25], [2000, 16]),
  c2025: row("c2025", [500, 2], [2600, 12]),
  c2026: row("c2026", [400, 2.5], [1500, 20]),
};

function report(of: BenchReport["targets"]): BenchReport {
  return {
    startedAt: "2026-11-28T00:00:00.000Z",
    finishedAt: "2026-11-28T00:01:00.000Z",
    machine: { cpus: 2, cpuModel: "test", bun: "1", platform: "linux-x64" },
    settings: { seconds: 1, warmupSeconds: 0, logLevel: "warn", workers: 1 },
    targets: of,
    ratios: allRatios(of),
    crossEra: crossEraRatios(of),
    goals: goalsOf(of),
    notes: [],
  };
}

describe("whoami report", () => {
  test("each (c) row's ratios are against the baseline of its own era", () => {
    const ratios = allRatios(targets);
    expect(ratios.c2025).toEqual({ callsPerSecondAt1: 0.5, callsPerSecondAt32: 0.65, p50At1: 2, p50At32: 1.5 });
    expect(ratios.c2026).toEqual({ callsPerSecondAt1: 0.5, callsPerSecondAt32: 0.75, p50At1: 2, p50At32: 1.25 });
  });

  test("the goals compare (c) with (a) of the same era", () => {
    const goals = goalsOf(targets);
    const ratioGoal = goals.find((g) => g.name.startsWith("(c) cluster 2026 calls/s at 32 clients >= 0.6 x"));
    expect(ratioGoal?.name).toContain("(a) baseline 2026");
    // 0.6 x (a) 2026's 2,000 calls/s, not (a) 2025's 4,000.
    expect(ratioGoal).toMatchObject({ value: 1500, limit: 1200, met: true });
    const added = goals.find((g) => g.name.startsWith("(c) cluster 2026 p50 at 1 client minus"));
    expect(added?.name).toContain("(a) baseline 2026 p50");
    expect(added).toMatchObject({ value: 1.25, met: false });
    const ratio2025 = goals.find((g) => g.name.startsWith("(c) cluster 2025 calls/s at 32 clients >= 0.6 x"));
    expect(ratio2025).toMatchObject({ value: 2600, limit: 2400, met: true });
  });

  test("the cross-era ratios are kept: (c) 2026 and (a) 2026 against (a) 2025", () => {
    expect(crossEraRatios(targets)).toEqual({
      "c2026/a2025": { callsPerSecondAt1: 0.4, callsPerSecondAt32: 0.38, p50At1: 2.5, p50At32: 2.5 },
      "a2026/a2025": { callsPerSecondAt1: 0.8, callsPerSecondAt32: 0.5, p50At1: 1.25, p50At32: 2 },
    });
  });

  test("without its own era's baseline a row is not compared with the other era's", () => {
    const partial = { a2025: targets.a2025, c2026: targets.c2026 };
    expect(allRatios(partial).c2026).toEqual({
      callsPerSecondAt1: null,
      callsPerSecondAt32: null,
      p50At1: null,
      p50At32: null,
    });
    const goals = goalsOf(partial).filter((g) => g.name.startsWith("(c) cluster 2026") && g.name.includes("(a)"));
    expect(goals.map((g) => g.met)).toEqual([null, null]);
    expect(crossEraRatios(partial)["c2026/a2025"]?.callsPerSecondAt32).toBe(0.38);
  });

  test("the printed report names both baselines, the same-era ratios and, labelled apart, the cross-era ones", () => {
    const text = formatReport(report(targets));
    expect(text).toMatch(/^\(a\) baseline 2025 +1 +1000 /m);
    expect(text).toMatch(/^\(a\) baseline 2026 +32 +2000 /m);
    expect(text).toMatch(/^\(c\) cluster 2026 \/ \(a\) baseline 2026 +0\.50 +0\.75 +2\.00 +1\.25$/m);
    expect(text).toMatch(/^\(c\) cluster 2025 \/ \(a\) baseline 2025 +0\.50 +0\.65 +2\.00 +1\.50$/m);
    expect(text).toMatch(/^ratio \(across eras\)/m);
    expect(text).toMatch(/^\(c\) cluster 2026 \/ \(a\) baseline 2025 +0\.40 +0\.38 +2\.50 +2\.50$/m);
    expect(text).toMatch(/^\(a\) baseline 2026 \/ \(a\) baseline 2025 +0\.80 +0\.50 +1\.25 +2\.00$/m);
    expect(text).toContain(
      "MET           (c) cluster 2026 calls/s at 32 clients >= 0.6 x (a) baseline 2026 at 32 clients: 1500.00 (limit 1200.00)",
    );
    // The across-eras table comes after the same-era one and no goal names (a) 2025 for a 2026 row.
    expect(text.indexOf("ratio (across eras)")).toBeGreaterThan(text.indexOf("ratio (same era)"));
    expect(text).not.toMatch(/cluster 2026 [^\n]*\(a\) baseline 2025[^\n]*limit/);
  });

  test("with one era only, the across-eras table is left out", () => {
    const text = formatReport(report({ a2025: targets.a2025, c2025: targets.c2025 }));
    expect(text).toContain("(c) cluster 2025 / (a) baseline 2025");
    expect(text).not.toContain("across eras");
  });

  test("the floor of the hop (c) adds is printed beside each era's added p50, only when it was measured", () => {
    const floor = { tcp: { p50: 110, cpu: 57 }, nats: { p50: 290, cpu: 69 }, bus: { p50: 380, cpu: 161 } };
    const text = formatReport({ ...report(targets), floor });
    expect(text).toContain(
      "p50 110 µs\ndirectly over TCP, 290 µs through nats-server (raw protocol), 380 µs through Hatch's bus",
    );
    // (c) 2025: 2 ms against (a) 2025's 1 ms; (c) 2026: 2.5 against 1.25.
    expect(text).toContain(
      "(c) cluster 2025: added p50 at 1 client 1.00 ms, of which 0.38 ms is the bus round trip's floor",
    );
    expect(text).toContain(
      "(c) cluster 2026: added p50 at 1 client 1.25 ms, of which 0.38 ms is the bus round trip's floor",
    );
    expect(formatReport(report(targets))).not.toContain("floor");
  });
});
