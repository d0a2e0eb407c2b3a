import { describe, expect, test } from "bun:test";
import { Fairness } from "../src/server-code/fairness.ts";

// The per-app CPU budget (a token bucket) and quarantine, on a clock the test moves.

describe("server code fairness: CPU budget and quarantine per app", () => {
  const make = () => {
    let now = 0;
    const fairness = new Fairness(
      { msPerSecond: 250, burstMs: 1000, quarantineMs: 60_000, stuckPenaltyMs: 10_000 },
      () => now,
    );
    return { fairness, advance: (ms: number) => (now += ms) };
  };

  test("an app runs until its burst is spent, is refused until it has paid its debt back, then runs again", () => {
    const { fairness, advance } = make();
    expect(fairness.refusal("a")).toBeNull();
    fairness.charge("a", 1200); // 200 ms in debt
    expect(fairness.refusal("a")).toEqual({ waitMs: 804, first: true });
    expect(fairness.refusal("a")?.first).toBe(false);
    // Another app is not affected.
    expect(fairness.refusal("b")).toBeNull();
    advance(804);
    expect(fairness.refusal("a")).toBeNull();
    // The bucket never holds more than the burst, however long the app rests.
    advance(3_600_000);
    fairness.charge("a", 1000);
    expect(fairness.refusal("a")?.first).toBe(true);
  });

  test("code the watchdog had to stop pays the time it was stuck and a penalty, and goes to quarantine", () => {
    const { fairness, advance } = make();
    fairness.stuck("a", 1300);
    expect(fairness.isQuarantined("a")).toBe(true);
    expect(fairness.refusal("a")?.waitMs).toBe(41204);
    advance(41204);
    expect(fairness.refusal("a")).toBeNull();
  });

  test("quarantine lasts its time after the app's last stop", () => {
    const { fairness, advance } = make();
    expect(fairness.isQuarantined("a")).toBe(false);
    fairness.stopped("a");
    advance(59_000);
    fairness.stopped("a");
    advance(59_000);
    expect(fairness.isQuarantined("a")).toBe(true);
    expect(fairness.isQuarantined("b")).toBe(false);
    advance(1_001);
    expect(fairness.isQuarantined("a")).toBe(false);
  });
});
