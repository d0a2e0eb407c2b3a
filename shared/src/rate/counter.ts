import { createHash } from "node:crypto";
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { Bus } from "../bus/types.ts";
import { isNatsBus, type NatsBus } from "../bus/nats.ts";
import { LazyKv } from "../bus/lazy-kv.ts";

// Rate limits that hold across copies of a process: fixed windows counted in a JetStream key-value bucket when the
// bus is NATS (every gateway copy sees the same counts), in memory in `bun run dev`. One interface, so a limit is
// written once.

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

/** Compare-and-set tries of one count before it lets the event through uncounted. */
const MAX_RACES = 32;
const windowOf = (now: number, windowMs: number) => Math.floor(now / windowMs);
const retryAfter = (now: number, windowMs: number) =>
  Math.max(1, Math.ceil(((windowOf(now, windowMs) + 1) * windowMs - now) / 1000));

/** In one process: a map of the current windows, bounded (a flood of keys forgets the oldest). */
export class MemoryRateCounter implements RateCounter {
  private readonly windows = new Map<string, number>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly maxKeys = 100_000,
  ) {}

  async take(key: string, limit: number, windowMs: number): Promise<RateDecision> {
    const now = this.now();
    const slot = `${key}\n${windowMs}\n${windowOf(now, windowMs)}`;
    const count = (this.windows.get(slot) ?? 0) + 1;
    this.windows.delete(slot);
    this.windows.set(slot, count);
    if (this.windows.size > this.maxKeys) this.windows.delete(this.windows.keys().next().value!);
    if (count > limit) {
      // A refused event is not counted: the window holds what was let through.
      this.windows.set(slot, count - 1);
      return { allowed: false, retryAfterSeconds: retryAfter(now, windowMs) };
    }
    return { allowed: true, retryAfterSeconds: 0 };
  }

  private slot(key: string, windowMs: number): string {
    return `${key}\n${windowMs}\n${windowOf(this.now(), windowMs)}`;
  }

  async peek(key: string, windowMs: number): Promise<number> {
    return this.windows.get(this.slot(key, windowMs)) ?? 0;
  }

  async release(key: string, windowMs: number): Promise<void> {
    const slot = this.slot(key, windowMs);
    const count = this.windows.get(slot) ?? 0;
    if (count > 0) this.windows.set(slot, count - 1);
  }

  async reset(key: string, windowMs: number): Promise<void> {
    this.windows.delete(this.slot(key, windowMs));
  }

  close(): void {
    this.windows.clear();
  }
}

/**
 * In a JetStream key-value bucket: one entry per key and window, incremented with compare-and-set (a lost race
 * reads and tries again). Entries expire with the bucket's max age, so old windows clean themselves up.
 */
export class KvRateCounter implements RateCounter {
  private readonly bucket: LazyKv;

  constructor(
    open: () => Promise<KV>,
    private readonly now: () => number = Date.now,
  ) {
    this.bucket = new LazyKv(open);
  }

  async take(key: string, limit: number, windowMs: number): Promise<RateDecision> {
    const { granted, retryAfterSeconds } = await this.takeUpTo(key, windowMs, (count) => (count < limit ? 1 : 0));
    return { allowed: granted > 0, retryAfterSeconds };
  }

  /**
   * Counts as many events for `key` in the current window as `size(count now)` says (0: none, refused), in one
   * compare-and-set. What a lease (LeasedRateCounter) takes from the shared count at once.
   */
  async takeUpTo(
    key: string,
    windowMs: number,
    size: (count: number) => number,
  ): Promise<{ granted: number; count: number; retryAfterSeconds: number }> {
    const now = this.now();
    const entry = this.entry(key, windowMs, now);
    const kv = await this.kv();
    for (let attempt = 0; attempt < MAX_RACES; attempt++) {
      // Each lost race means another copy counted: back off a little (random, growing) so the copies stop colliding.
      if (attempt > 1) await Bun.sleep(Math.random() * attempt);
      const current = await kv.get(entry);
      const count = current && current.operation === "PUT" ? Number(current.string()) : 0;
      const granted = Math.max(0, Math.floor(size(count)));
      if (granted === 0) return { granted: 0, count, retryAfterSeconds: retryAfter(now, windowMs) };
      try {
        if (current && current.operation === "PUT") await kv.update(entry, String(count + granted), current.revision);
        else await kv.create(entry, String(granted));
        return { granted, count: count + granted, retryAfterSeconds: 0 };
      } catch (error) {
        // Another copy counted in between: read again. Anything else (no permission, no server) is the caller's.
        if (!isLostRace(error)) throw error;
      }
    }
    // Still contended after MAX_RACES reads (each lost to a copy that counted): let one event through rather than refuse
    // on our own failure to count. With the backoff above this is rare enough not to matter for any limit.
    return { granted: 1, count: Number.NaN, retryAfterSeconds: 0 };
  }

  /** KV keys are restricted ([-/_=.a-zA-Z0-9]): the caller's key is hashed. */
  private entry(key: string, windowMs: number, now = this.now()): string {
    return `${createHash("sha256").update(key).digest("base64url").slice(0, 32)}.${windowMs}.${windowOf(now, windowMs)}`;
  }

  private kv(): Promise<KV> {
    return this.bucket.get();
  }

  async peek(key: string, windowMs: number): Promise<number> {
    const current = await (await this.kv()).get(this.entry(key, windowMs));
    return current && current.operation === "PUT" ? Number(current.string()) : 0;
  }

  /** Takes back `n` events (default one) of the window at `at` (default now), never below zero. */
  async release(key: string, windowMs: number, n = 1, at = this.now()): Promise<void> {
    const kv = await this.kv();
    const entry = this.entry(key, windowMs, at);
    for (let attempt = 0; attempt < 8; attempt++) {
      const current = await kv.get(entry);
      const count = current && current.operation === "PUT" ? Number(current.string()) : 0;
      if (!current || count <= 0) return;
      try {
        await kv.update(entry, String(Math.max(0, count - n)), current.revision);
        return;
      } catch (error) {
        if (!isLostRace(error)) throw error;
      }
    }
  }

  async reset(key: string, windowMs: number): Promise<void> {
    await (await this.kv()).delete(this.entry(key, windowMs));
  }

  close(): void {
    this.bucket.forget();
  }
}

/**
 * One bucket per bus prefix and user of it: the gateway's (no scope) and the app host's (`apps`), so NATS permissions
 * let each process write only its own (deploy/nats-auth.conf).
 */
const bucketName = (bus: NatsBus, scope?: string) => ["hatch_rate", bus.prefix, scope].filter(Boolean).join("_");

function isLostRace(error: unknown): boolean {
  return (
    error instanceof JetStreamApiError &&
    (error.code === JetStreamApiCodes.StreamWrongLastSequence ||
      error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}

/** The counter for a bus: shared in JetStream on NATS (bucket per bus prefix), in memory otherwise. */
export function createRateCounter(bus: Bus, maxWindowMs = 10 * 60_000, scope?: string): RateCounter {
  if (!isNatsBus(bus)) return new MemoryRateCounter();
  const name = bucketName(bus, scope);
  return new KvRateCounter(() => new Kvm(bus.connection).create(name, { history: 1, ttl: maxWindowMs * 2 }));
}

/** Removes the bus's rate bucket (test runs, each under its own prefix, leave nothing behind). */
export async function deleteRateBucket(bus: NatsBus, scope?: string): Promise<void> {
  const kv = await new Kvm(bus.connection).open(bucketName(bus, scope));
  await kv.destroy();
}
