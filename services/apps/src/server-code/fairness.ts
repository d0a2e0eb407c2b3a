// What keeps one app's server code from hurting another's, on the app host's side of the sandbox workers (runner.ts
// routes by it). Two parts:
// - A CPU budget per app: a token bucket filled at `msPerSecond` of CPU time per second up to `burstMs`. Each run
//   is charged the worker thread's CPU time it used (its module load included). A run the watchdog had to stop is
//   charged the time it was stuck plus `stuckPenaltyMs`: code that starves QuickJS's interrupt check (a loop of huge
//   allocations) costs the machine far more than its time, and no ordinary code does it. An app whose bucket is
//   empty is refused at the door (429 with Retry-After) until it has
//   paid its debt, so it cannot saturate the workers however many requests it sends; other apps never wait for it.
// - Quarantine: an app whose code was stopped by a limit (CPU, memory, or the watchdog) runs, for `quarantineMs`
//   after its last stop, on quarantine workers of its own instead of the shared ones. Its next stops, and the
//   watchdog terminating a quarantine worker, reach only quarantined apps.

export interface FairnessOptions {
  /** CPU time an app's server code may use per second, on average. */
  msPerSecond: number;
  /** CPU time it may use at once beyond the average (a full bucket). */
  burstMs: number;
  /** How long an app stays on the quarantine workers after its code was last stopped by a limit. */
  quarantineMs: number;
  /** CPU time charged on top of the time a run was stuck when the watchdog had to stop it. */
  stuckPenaltyMs: number;
}

/** Apps remembered at most (a flood of apps cannot grow the maps without bound; full buckets are not stored). */
const MAX_APPS = 10_000;

export class Fairness {
  /** Buckets that are not full: tokens at a time (may be negative: a debt). */
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly quarantined = new Map<string, number>();
  private readonly refusing = new Set<string>();

  constructor(
    private readonly options: FairnessOptions,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * null when the app may run now; else the milliseconds until its bucket holds CPU time again, and whether this
   * is the first refusal since it last ran (its owner's log says so once).
   */
  refusal(app: string): { waitMs: number; first: boolean } | null {
    const tokens = this.tokens(app);
    if (tokens > 0) {
      this.refusing.delete(app);
      return null;
    }
    const first = !this.refusing.has(app);
    if (first) {
      if (this.refusing.size >= MAX_APPS) this.refusing.clear();
      this.refusing.add(app);
    }
    return { waitMs: Math.ceil(((1 - tokens) * 1000) / this.options.msPerSecond), first };
  }

  /** Takes what a run of the app used from its bucket. */
  charge(app: string, cpuMs: number): void {
    if (!(cpuMs > 0)) return;
    const tokens = this.tokens(app) - cpuMs;
    this.buckets.delete(app);
    if (this.buckets.size >= MAX_APPS) this.forgetOldest(this.buckets);
    this.buckets.set(app, { tokens, at: this.now() });
  }

  /** The watchdog stopped the app's code after `ms` stuck inside one built-in. */
  stuck(app: string, ms: number): void {
    this.charge(app, ms + this.options.stuckPenaltyMs);
    this.stopped(app);
  }

  /** The app's code was stopped by a limit: it moves to the quarantine workers (again, for the full time). */
  stopped(app: string): void {
    this.quarantined.delete(app);
    if (this.quarantined.size >= MAX_APPS) this.forgetOldest(this.quarantined);
    this.quarantined.set(app, this.now() + this.options.quarantineMs);
  }

  isQuarantined(app: string): boolean {
    const until = this.quarantined.get(app);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.quarantined.delete(app);
    return false;
  }

  private tokens(app: string): number {
    const bucket = this.buckets.get(app);
    if (!bucket) return this.options.burstMs;
    const tokens = bucket.tokens + ((this.now() - bucket.at) * this.options.msPerSecond) / 1000;
    if (tokens < this.options.burstMs) return tokens;
    this.buckets.delete(app);
    return this.options.burstMs;
  }

  /** Drops the oldest tenth of a map that reached its bound (insertion order is age order: entries are re-inserted). */
  private forgetOldest(map: Map<string, unknown>): void {
    let drop = Math.ceil(MAX_APPS / 10);
    for (const key of map.keys()) {
      if (drop-- <= 0) break;
      map.delete(key);
    }
  }
}
