import { createHash } from "node:crypto";
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { Bus } from "../bus/types.ts";
import { isNatsBus, type NatsBus } from "../bus/nats.ts";
import { openKvBucket } from "../bus/jetstream-replicas.ts";
import type { Logger } from "../logger.ts";
import { LazyKv } from "../bus/lazy-kv.ts";
import { withDeadlineOr } from "../deadline.ts";

// Rate limits that hold across copies of a process: fixed windows counted in a JetStream key-value bucket when the
// bus is NATS (every copy sees the same counts), in memory in `bun run dev`. One interface, so a limit is written once.
// A counter's windows are of one kind (RateWindows): on the clock (the gateway's tool calls and sign-in throttles) or
// from a key's first event (the app host's requests per viewer: each viewer gets a whole minute from their first).

export interface RateDecision {
  allowed: boolean;
  /** Seconds until the window ends; what Retry-After and the error text say when refused. */
  retryAfterSeconds: number;
}

export interface RateCounter {
  /** Counts one event for `key` in the current window of `windowMs`; refused once `limit` are in it. */
  take(key: string, limit: number, windowMs: number): Promise<RateDecision>;
  /** Events counted for `key` in the current window, without counting one. */
  peek(key: string, windowMs: number): Promise<number>;
  /** Takes back one event of the current window (one counted up front that turned out fine). */
  release(key: string, windowMs: number): Promise<void>;
  /** Forgets the current window of `key`. */
  reset(key: string, windowMs: number): Promise<void>;
  close(): void;
}

/**
 * Where a key's window starts. `clock`: at multiples of the window on the clock (every key's minute ends together; an
 * entry per window). `first`: at the key's first event after its last window ended (its minute runs from then; one
 * entry per key, holding the start and the count).
 */
export type RateWindows = "clock" | "first";

/** Compare-and-set tries of one count before it lets the event through uncounted. */
const MAX_RACES = 32;
const windowOf = (now: number, windowMs: number) => Math.floor(now / windowMs);
const retryAfter = (start: number, now: number, windowMs: number) =>
  Math.max(1, Math.ceil((start + windowMs - now) / 1000));

/** A key's current window: when it started and the events counted in it. */
interface Window {
  start: number;
  count: number;
}

/** The window of the kind for an event at `now` when none is stored (or the stored one has ended). */
function newWindow(windows: RateWindows, now: number, windowMs: number): Window {
  return { start: windows === "clock" ? windowOf(now, windowMs) * windowMs : now, count: 0 };
}

/** A stored window that still runs at `now`, else null (only a `first` window ends under the same key). */
function live(window: Window | undefined | null, now: number, windowMs: number): Window | null {
  return window && now - window.start < windowMs ? window : null;
}

/** In one process: a map of the current windows, bounded (a flood of keys forgets the oldest). */
export class MemoryRateCounter implements RateCounter {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly maxKeys = 100_000,
    readonly kind: RateWindows = "clock",
  ) {}

  /** Windows remembered now (at most maxKeys). */
  get size(): number {
    return this.windows.size;
  }

  async take(key: string, limit: number, windowMs: number): Promise<RateDecision> {
    const { granted, retryAfterSeconds } = await this.takeUpTo(key, windowMs, (count) => (count < limit ? 1 : 0));
    return { allowed: granted > 0, retryAfterSeconds };
  }

  /** As KvRateCounter.takeUpTo: counts `size(count now)` events at once (0: refused, and nothing counted). */
  async takeUpTo(
    key: string,
    windowMs: number,
    size: (count: number) => number,
  ): Promise<{ granted: number; count: number; retryAfterSeconds: number }> {
    const now = this.now();
    const slot = this.slot(key, windowMs, now);
    const window = this.current(slot, windowMs, now) ?? newWindow(this.kind, now, windowMs);
    const granted = Math.max(0, Math.floor(size(window.count)));
    if (granted === 0)
      return { granted: 0, count: window.count, retryAfterSeconds: retryAfter(window.start, now, windowMs) };
    // Re-inserted, so the map's order is the order keys were last counted in: a flood forgets the stalest first.
    this.windows.delete(slot);
    this.windows.set(slot, { start: window.start, count: window.count + granted });
    if (this.windows.size > this.maxKeys) this.windows.delete(this.windows.keys().next().value!);
    return { granted, count: window.count + granted, retryAfterSeconds: 0 };
  }

  private slot(key: string, windowMs: number, at: number): string {
    return this.kind === "clock" ? `${key}\n${windowMs}\n${windowOf(at, windowMs)}` : `${key}\n${windowMs}`;
  }

  /** The slot's window if it still runs (a `clock` slot names its window, so it runs while it is kept). */
  private current(slot: string, windowMs: number, now: number): Window | null {
    const window = this.windows.get(slot);
    return this.kind === "clock" ? (window ?? null) : live(window, now, windowMs);
  }

  async peek(key: string, windowMs: number): Promise<number> {
    const now = this.now();
    return this.current(this.slot(key, windowMs, now), windowMs, now)?.count ?? 0;
  }

  async release(key: string, windowMs: number, n = 1, at = this.now()): Promise<void> {
    const slot = this.slot(key, windowMs, at);
    const window = this.current(slot, windowMs, this.now());
    if (window && window.count > 0) window.count = Math.max(0, window.count - n);
  }

  async reset(key: string, windowMs: number): Promise<void> {
    this.windows.delete(this.slot(key, windowMs, this.now()));
  }

  close(): void {
    this.windows.clear();
  }
}

/** How long a call waits on the shared count before it is counted in this copy instead. */
export const SHARED_WAIT_MS = 500;
/** While the shared count is away, it is tried again in the background at most this often (no call waits on it). */
const PROBE_EVERY_MS = 1_000;

type Outcome<T> = { value: T } | { error: unknown } | "late";

/**
 * In a JetStream key-value bucket: one entry per key and window, incremented with compare-and-set (a lost race
 * reads and tries again). Entries expire with the bucket's max age, so old windows clean themselves up.
 *
 * When the bucket does not answer within SHARED_WAIT_MS (its node is gone and no other holds it, a leader election,
 * NATS away) or fails, the counter degrades: every call is counted in this copy's memory at once (each copy then holds
 * the limit on its own, so the limit across copies is looser until it is back), with one log line. A probe in the
 * background finds the bucket again; then the shared count is used, and the line says so. No call waits on a node
 * that is gone.
 */
export class KvRateCounter implements RateCounter {
  private readonly bucket: LazyKv;
  private readonly local: MemoryRateCounter;
  private degradedAt: number | null = null;
  private lastProbe = 0;
  private probing = false;

  constructor(
    open: () => Promise<KV>,
    private readonly now: () => number = Date.now,
    private readonly logger?: Logger,
    private readonly waitMs = SHARED_WAIT_MS,
    readonly kind: RateWindows = "clock",
  ) {
    this.local = new MemoryRateCounter(now, undefined, kind);
    this.bucket = new LazyKv(open);
  }

  /** True while calls are counted in this copy because the shared bucket did not answer. */
  get degraded(): boolean {
    return this.degradedAt !== null;
  }

  async take(key: string, limit: number, windowMs: number): Promise<RateDecision> {
    const { granted, retryAfterSeconds } = await this.takeUpTo(key, windowMs, (count) => (count < limit ? 1 : 0));
    return { allowed: granted > 0, retryAfterSeconds };
  }

  /**
   * Counts as many events for `key` in the current window as `size(count now)` says (0: none, refused), in one
   * compare-and-set. What a lease (LeasedRateCounter) takes from the shared count at once.
   */
  takeUpTo(
    key: string,
    windowMs: number,
    size: (count: number) => number,
  ): Promise<{ granted: number; count: number; retryAfterSeconds: number }> {
    return this.shared(
      (kv) => this.sharedTakeUpTo(kv, key, windowMs, size),
      () => this.local.takeUpTo(key, windowMs, size),
    );
  }

  private async sharedTakeUpTo(
    kv: KV,
    key: string,
    windowMs: number,
    size: (count: number) => number,
  ): Promise<{ granted: number; count: number; retryAfterSeconds: number }> {
    const now = this.now();
    const entry = this.entry(key, windowMs, now);
    for (let attempt = 0; attempt < MAX_RACES; attempt++) {
      // Each lost race means another copy counted: back off a little (random, growing) so the copies stop colliding.
      if (attempt > 1) await Bun.sleep(Math.random() * attempt);
      const current = await kv.get(entry);
      const stored = current && current.operation === "PUT" ? current : null;
      const window = this.windowIn(stored?.string(), windowMs, now);
      const granted = Math.max(0, Math.floor(size(window.count)));
      if (granted === 0)
        return { granted: 0, count: window.count, retryAfterSeconds: retryAfter(window.start, now, windowMs) };
      const value = this.encode({ start: window.start, count: window.count + granted });
      try {
        // An ended `first` window is written over under its revision, as a count is: a copy that raced it loses.
        if (stored) await kv.update(entry, value, stored.revision);
        else await kv.create(entry, value);
        return { granted, count: window.count + granted, retryAfterSeconds: 0 };
      } catch (error) {
        // Another copy counted in between: read again. Anything else (no permission, no server) degrades.
        if (!isLostRace(error)) throw error;
      }
    }
    // Still contended after MAX_RACES reads (each lost to a copy that counted): let one event through rather than refuse
    // on our own failure to count. With the backoff above this is rare enough not to matter for any limit.
    return { granted: 1, count: Number.NaN, retryAfterSeconds: 0 };
  }

  /**
   * Runs `op` on the shared bucket within waitMs; past it, or on a failure, degrades and answers from `fallback` (the
   * count in this copy). While degraded, answers from `fallback` at once and probes the bucket in the background.
   */
  private async shared<T>(op: (kv: KV) => Promise<T>, fallback: () => Promise<T>): Promise<T> {
    if (this.degradedAt !== null) {
      this.probe();
      return fallback();
    }
    const work = this.kv().then(op);
    const outcome = await this.within(work);
    if (outcome === "late") {
      work.catch(() => undefined);
      this.degrade(`no answer within ${this.waitMs} ms`);
      return fallback();
    }
    if ("error" in outcome) {
      // Refused by the server (no permission for this bucket): the caller's error, as before; counting locally would
      // let through what the permissions are there to stop.
      if (!isAway(outcome.error)) throw outcome.error;
      this.degrade(outcome.error instanceof Error ? outcome.error.message : String(outcome.error));
      return fallback();
    }
    return outcome.value;
  }

  private async within<T>(work: Promise<T>): Promise<Outcome<T>> {
    const settled = work.then(
      (value): Outcome<T> => ({ value }),
      (error: unknown): Outcome<T> => ({ error }),
    );
    return withDeadlineOr(settled, this.waitMs, "late" as const);
  }

  private degrade(reason: string): void {
    if (this.degradedAt !== null) return;
    this.degradedAt = this.now();
    this.lastProbe = this.degradedAt;
    this.logger?.warn("rate counter degraded: the shared count does not answer; counting in this copy", {
      reason,
      waitMs: this.waitMs,
    });
  }

  /** One background read of the bucket at a time, at most every PROBE_EVERY_MS; an answer ends the degraded state. */
  private probe(): void {
    const now = this.now();
    if (this.probing || now - this.lastProbe < PROBE_EVERY_MS) return;
    this.probing = true;
    this.lastProbe = now;
    const work = this.kv().then((kv) => kv.get("probe"));
    void this.within(work)
      .then((outcome) => {
        if (outcome === "late") work.catch(() => undefined);
        if (outcome === "late" || "error" in outcome || this.degradedAt === null) return;
        this.logger?.info("rate counter shared again", { degradedMs: this.now() - this.degradedAt });
        this.degradedAt = null;
      })
      .finally(() => {
        this.probing = false;
      });
  }

  /**
   * KV keys are restricted ([-/_=.a-zA-Z0-9]): the caller's key is hashed. A `clock` window has an entry of its own
   * (the count alone); a `first` key has one entry (`<start> <count>`) its next window writes over.
   */
  private entry(key: string, windowMs: number, now = this.now()): string {
    const hashed = createHash("sha256").update(key).digest("base64url").slice(0, 32);
    return this.kind === "clock" ? `${hashed}.${windowMs}.${windowOf(now, windowMs)}` : `${hashed}.${windowMs}.f`;
  }

  /** The window an entry's value holds that still runs at `now`, else a new one (nothing counted). */
  private windowIn(value: string | undefined, windowMs: number, now: number): Window {
    if (value === undefined) return newWindow(this.kind, now, windowMs);
    if (this.kind === "clock") return { start: windowOf(now, windowMs) * windowMs, count: Number(value) };
    const [start, count] = value.split(" ").map(Number);
    const stored = Number.isFinite(start) && Number.isFinite(count) ? { start: start!, count: count! } : null;
    return live(stored, now, windowMs) ?? newWindow(this.kind, now, windowMs);
  }

  private encode(window: Window): string {
    return this.kind === "clock" ? String(window.count) : `${window.start} ${window.count}`;
  }

  private kv(): Promise<KV> {
    return this.bucket.get();
  }

  peek(key: string, windowMs: number): Promise<number> {
    return this.shared(
      async (kv) => {
        const current = await kv.get(this.entry(key, windowMs));
        return current && current.operation === "PUT" ? this.windowIn(current.string(), windowMs, this.now()).count : 0;
      },
      () => this.local.peek(key, windowMs),
    );
  }

  /**
   * Takes back `n` events (default one) of the window at `at` (default now; a `first` counter's window is always the
   * key's current one), never below zero.
   */
  release(key: string, windowMs: number, n = 1, at = this.now()): Promise<void> {
    return this.shared(
      async (kv) => {
        const entry = this.entry(key, windowMs, at);
        for (let attempt = 0; attempt < 8; attempt++) {
          const current = await kv.get(entry);
          if (!current || current.operation !== "PUT") return;
          const window = this.windowIn(current.string(), windowMs, this.kind === "clock" ? at : this.now());
          if (window.count <= 0) return;
          try {
            await kv.update(entry, this.encode({ ...window, count: Math.max(0, window.count - n) }), current.revision);
            return;
          } catch (error) {
            if (!isLostRace(error)) throw error;
          }
        }
      },
      () => this.local.release(key, windowMs, n, at),
    );
  }

  reset(key: string, windowMs: number): Promise<void> {
    return this.shared(
      async (kv) => void (await kv.delete(this.entry(key, windowMs))),
      () => this.local.reset(key, windowMs),
    );
  }

  close(): void {
    this.bucket.forget();
    this.local.close();
  }
}

/**
 * One bucket per bus prefix and user of it: the gateway's (no scope) and the app host's (`apps`), so NATS permissions
 * let each process write only its own (deploy/nats-auth.conf).
 */
const bucketName = (bus: NatsBus, scope?: string) => ["hatch_rate", bus.prefix, scope].filter(Boolean).join("_");

/** A failure that says the bucket or NATS is away (not a refusal): no answer, no responders, a closed connection. */
function isAway(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (/permission|authorization/i.test(`${error.name} ${error.message}`)) return false;
  if (error.cause instanceof Error && /permission|authorization/i.test(error.cause.message)) return false;
  return /timeout|timed out|no responders|not enabled|closed|draining|disconnect|connection|unavailable|no leader|not found/i.test(
    `${error.name} ${error.message}`,
  );
}

function isLostRace(error: unknown): boolean {
  return (
    error instanceof JetStreamApiError &&
    (error.code === JetStreamApiCodes.StreamWrongLastSequence ||
      error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}

/**
 * The counter for a bus: shared in JetStream on NATS (bucket per bus prefix and scope), in memory otherwise. Its
 * windows are of one kind (`windows`); two kinds never share a scope's bucket.
 */
export function createRateCounter(
  bus: Bus,
  maxWindowMs = 10 * 60_000,
  scope?: string,
  logger?: Logger,
  windows: RateWindows = "clock",
): RateCounter {
  if (!isNatsBus(bus)) return new MemoryRateCounter(undefined, undefined, windows);
  const name = bucketName(bus, scope);
  return new KvRateCounter(
    () => openKvBucket(bus, name, { history: 1, ttl: maxWindowMs * 2 }, logger),
    undefined,
    logger?.child({ bucket: name }),
    undefined,
    windows,
  );
}

/** Removes the bus's rate bucket (test runs, each under its own prefix, leave nothing behind). */
export async function deleteRateBucket(bus: NatsBus, scope?: string): Promise<void> {
  const kv = await new Kvm(bus.connection).open(bucketName(bus, scope));
  await kv.destroy();
}
