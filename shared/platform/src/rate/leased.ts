import { KvRateCounter, type RateCounter, type RateDecision } from "./counter.ts";

// Rate limits on hot keys (every tool call counts against its grant and its user) without a JetStream round trip per
// event. The plain KvRateCounter costs each event a read and a compare-and-set on one key; with 32 calls of one user
// at once most of them lose the race and read again, so calls queued behind the counter (the bench measured 292
// calls/s, 100 ms p50, and a NATS and gateway CPU share per call dominated by key-value traffic).
//
// The design: leases from the shared count.
// - The shared count of a key's window (JetStream key-value, every copy sees it) counts every event any copy may let
//   through, before it lets it through: a copy takes a lease of n events at once (count += n in one compare-and-set)
//   and hands them out from memory. So the limit holds across copies as before: the shared count never passes the
//   limit, and no allowed event goes uncounted. A copy that dies leaves its unspent lease counted (strict side).
// - A lease is small where that matters: at most 1/16 of what is left of the limit, so the last 16 events of a window
//   go one at a time, each its own compare-and-set, exactly as the plain counter (3 or 5 a minute are never leased in
//   bulk). It grows, doubling up to MAX_LEASE, only while the key is hot (the last lease taken under HOT_MS ago).
// - On a hot key the next lease is fetched in the background once half of one is spent: its events never wait on
//   NATS. A cold key's event (or one of the last 16) waits one round trip, as before.
// - Unspent lease goes back to the shared count after IDLE_MS without events for the key (and on flush/close), so
//   another copy is not refused for events this copy will not make. Until then, another copy can refuse at most that
//   unspent part early (at most 1/16 of the room left when it was leased, MAX_LEASE at most).

/** The biggest lease a hot key takes at once. */
const MAX_LEASE = 256;
/** A lease taken sooner than this after the previous one doubles the next; a later one halves it. */
const HOT_MS = 250;
/** A key without events for this long gives back its unspent lease. */
const IDLE_MS = 1_000;
/** A lease is at most this share of what is left of the limit. */
const ROOM_SHARE = 16;

interface Lease {
  granted: number;
  retryAfterSeconds: number;
}

interface Slot {
  key: string;
  windowMs: number;
  /** A moment inside the slot's window: where a returned lease goes. */
  at: number;
  limit: number;
  /** Leased events not yet handed out. */
  left: number;
  /** Events handed out (and not released): what release() may take back into the lease. */
  spent: number;
  /** Size of the next lease. */
  lease: number;
  lastLeaseAt: number;
  /** What the last lease granted: one means near the limit (or cold), where nothing is fetched ahead. */
  lastGranted: number;
  lastTakeAt: number;
  refill: Promise<Lease> | null;
}

export class LeasedRateCounter implements RateCounter {
  private readonly slots = new Map<string, Slot>();
  private readonly sweep: ReturnType<typeof setInterval>;

  constructor(
    private readonly shared: KvRateCounter,
    private readonly now: () => number = Date.now,
    /** Sees failures of background work (prefetch, giving back), which has no caller to throw to. */
    private readonly onError: (error: unknown) => void = () => {},
  ) {
    // A lease is taken from a window on the clock (a slot per window); a key's `first` window has no such slot.
    if (shared.kind !== "clock") throw new Error("LeasedRateCounter leases from a counter of clock windows only");
    this.sweep = setInterval(() => this.giveBackIdle(), IDLE_MS);
    this.sweep.unref?.();
  }

  async take(key: string, limit: number, windowMs: number): Promise<RateDecision> {
    const now = this.now();
    const id = `${key}\n${windowMs}\n${Math.floor(now / windowMs)}`;
    let slot = this.slots.get(id);
    if (!slot) {
      slot = {
        key,
        windowMs,
        at: now,
        limit,
        left: 0,
        spent: 0,
        lease: 1,
        lastLeaseAt: 0,
        lastGranted: 0,
        lastTakeAt: now,
        refill: null,
      };
      this.slots.set(id, slot);
    }
    slot.limit = limit;
    slot.lastTakeAt = now;
    for (;;) {
      if (slot.left > 0) {
        slot.left--;
        slot.spent++;
        // Half spent on a hot key: the next lease comes in the background, before this one runs out. (Not one at a
        // time: fetched ahead, the last events of a window would sit unspent here while another copy is refused.)
        if (slot.lastGranted > 1 && slot.left <= slot.lease / 2 && !slot.refill)
          this.startRefill(slot).catch(this.onError);
        return { allowed: true, retryAfterSeconds: 0 };
      }
      const { granted, retryAfterSeconds } = await this.startRefill(slot);
      // Nothing left in the shared window: refused, as the plain counter refuses (a refusal is not counted).
      if (granted === 0) return { allowed: false, retryAfterSeconds };
      // Granted but already handed to concurrent takers: go round for the next lease.
    }
  }

  /** One lease at a time per slot; concurrent takers share it. Resolves to how many events it granted. */
  private startRefill(slot: Slot): Promise<Lease> {
    slot.refill ??= (async () => {
      try {
        const now = this.now();
        slot.lease =
          now - slot.lastLeaseAt < HOT_MS ? Math.min(MAX_LEASE, slot.lease * 2) : Math.max(1, slot.lease >> 1);
        slot.lastLeaseAt = now;
        const lease = await this.shared.takeUpTo(slot.key, slot.windowMs, (count) => {
          const room = slot.limit - count;
          return Math.min(room, slot.lease, Math.max(1, Math.floor(room / ROOM_SHARE)));
        });
        slot.left += lease.granted;
        slot.lastGranted = lease.granted;
        return lease;
      } finally {
        slot.refill = null;
      }
    })();
    return slot.refill;
  }

  async peek(key: string, windowMs: number): Promise<number> {
    const counted = await this.shared.peek(key, windowMs);
    return Math.max(0, counted - (this.slotOf(key, windowMs)?.left ?? 0));
  }

  async release(key: string, windowMs: number): Promise<void> {
    const slot = this.slotOf(key, windowMs);
    if (slot && slot.spent > 0) {
      // Still counted in the shared window: it goes back into this copy's lease (and to the shared count when idle).
      slot.spent--;
      slot.left++;
    } else await this.shared.release(key, windowMs);
  }

  async reset(key: string, windowMs: number): Promise<void> {
    const slot = this.slotOf(key, windowMs);
    if (slot) {
      slot.left = 0;
      slot.spent = 0;
    }
    await this.shared.reset(key, windowMs);
  }

  /** Gives every unspent lease back to the shared count (a gateway that stops leaves no events counted twice). */
  async flush(): Promise<void> {
    const slots = [...this.slots.values()];
    this.slots.clear();
    await Promise.all(slots.map((slot) => this.giveBack(slot)));
  }

  close(): void {
    clearInterval(this.sweep);
    this.flush().catch(this.onError);
  }

  private slotOf(key: string, windowMs: number): Slot | undefined {
    return this.slots.get(`${key}\n${windowMs}\n${Math.floor(this.now() / windowMs)}`);
  }

  private giveBackIdle(): void {
    const now = this.now();
    for (const [id, slot] of this.slots) {
      if (slot.refill) continue;
      // A past window's lease is not given back: that window is over and its entry expires.
      const past = Math.floor(slot.at / slot.windowMs) < Math.floor(now / slot.windowMs);
      if (!past && now - slot.lastTakeAt < IDLE_MS) continue;
      this.slots.delete(id);
      if (!past) this.giveBack(slot).catch(this.onError);
    }
  }

  private async giveBack(slot: Slot): Promise<void> {
    const n = slot.left;
    slot.left = 0;
    if (n > 0) await this.shared.release(slot.key, slot.windowMs, n, slot.at);
  }
}

/** Hot keys leased (LeasedRateCounter) when the counter is shared in JetStream; a counter in memory is fast as it is. */
export function leaseHotKeys(counter: RateCounter, onError?: (error: unknown) => void): RateCounter {
  return counter instanceof KvRateCounter ? new LeasedRateCounter(counter, undefined, onError) : counter;
}
