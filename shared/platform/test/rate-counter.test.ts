import { afterAll, describe, expect, test } from "bun:test";
import { Kvm, type KV } from "@nats-io/kv";
import {
  createNatsBus,
  KvRateCounter,
  LeasedRateCounter,
  MemoryRateCounter,
  type NatsBus,
  type RateCounter,
  type RateWindows,
} from "@hatch/platform";

const natsUrl = process.env.TEST_NATS_URL;
const MINUTE = 60_000;

/** The same behaviour from both counters; `pair` gives two counters that stand for two copies of a process. */
function rateContract(
  kind: string,
  pair: (clock: () => number) => Promise<[RateCounter, RateCounter]>,
  enabled: boolean,
) {
  describe.skipIf(!enabled)(`rate counter: ${kind}`, () => {
    test("allows up to the limit in a window, then refuses until the window ends", async () => {
      let now = 10 * MINUTE + 15_000;
      const [counter] = await pair(() => now);
      const key = `grant-${crypto.randomUUID()}`;
      for (let i = 0; i < 3; i++) expect((await counter.take(key, 3, MINUTE)).allowed).toBe(true);
      expect(await counter.take(key, 3, MINUTE)).toEqual({ allowed: false, retryAfterSeconds: 45 });
      expect((await counter.take(`other-${key}`, 3, MINUTE)).allowed).toBe(true);
      now += 45_000;
      expect((await counter.take(key, 3, MINUTE)).allowed).toBe(true);
    });

    test("peek reads without counting; release takes one back; reset forgets the window; a refusal is not counted", async () => {
      const now = 40 * MINUTE;
      const [counter] = await pair(() => now);
      const key = `signin-${crypto.randomUUID()}`;
      expect(await counter.peek(key, MINUTE)).toBe(0);
      for (let i = 0; i < 2; i++) await counter.take(key, 2, MINUTE);
      expect((await counter.take(key, 2, MINUTE)).allowed).toBe(false);
      expect(await counter.peek(key, MINUTE)).toBe(2);
      await counter.release(key, MINUTE);
      expect(await counter.peek(key, MINUTE)).toBe(1);
      expect((await counter.take(key, 2, MINUTE)).allowed).toBe(true);
      await counter.reset(key, MINUTE);
      expect(await counter.peek(key, MINUTE)).toBe(0);
      // Nothing to take back stays at zero, and a reset window counts again from one.
      await counter.release(key, MINUTE);
      expect(await counter.peek(key, MINUTE)).toBe(0);
      expect((await counter.take(key, 2, MINUTE)).allowed).toBe(true);
      expect(await counter.peek(key, MINUTE)).toBe(1);
    });

    test("copies share the counts", async () => {
      const now = 20 * MINUTE;
      const [one, two] = await pair(() => now);
      const key = `user-${crypto.randomUUID()}`;
      expect((await one.take(key, 2, MINUTE)).allowed).toBe(true);
      expect((await two.take(key, 2, MINUTE)).allowed).toBe(true);
      const third = await one.take(key, 2, MINUTE);
      // In memory each copy counts alone (dev runs one); in JetStream the third call is over the shared limit.
      expect(third.allowed).toBe(kind === "memory");
    });

    test("concurrent takes never let more than the limit through", async () => {
      const now = 30 * MINUTE;
      const [one, two] = await pair(() => now);
      const key = `burst-${crypto.randomUUID()}`;
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? one : two).take(key, 5, MINUTE)));
      const allowed = results.filter((r) => r.allowed).length;
      expect(allowed).toBe(kind === "memory" ? 10 : 5);
    });
  });
}

rateContract("memory", async (clock) => [new MemoryRateCounter(clock), new MemoryRateCounter(clock)], true);

const buses: NatsBus[] = [];
/** Writes (create, update) each copy's key-value handle made, to see what a counter costs NATS. */
const writes = { count: 0 };

/** Two KV counters on one fresh bucket, standing for two copies of a process, each with its own connection. */
async function kvPair(clock: () => number, windows: RateWindows = "clock"): Promise<[KvRateCounter, KvRateCounter]> {
  const prefix = `rate_${process.pid}_${crypto.randomUUID().slice(0, 8)}`;
  const open = async () => {
    const bus = await createNatsBus({ url: natsUrl!, prefix });
    buses.push(bus);
    return new KvRateCounter(
      async () => {
        const kv = await new Kvm(bus.connection).create(`hatch_rate_${prefix}`, { history: 1, ttl: 20 * MINUTE });
        return new Proxy(kv, {
          get(target, name, receiver) {
            const value = Reflect.get(target, name, receiver);
            if (name !== "create" && name !== "update") return typeof value === "function" ? value.bind(target) : value;
            return (...args: unknown[]) => {
              writes.count++;
              return (value as (...a: unknown[]) => unknown).apply(target, args);
            };
          },
        }) as KV;
      },
      clock,
      undefined,
      undefined,
      windows,
    );
  };
  const pair: [KvRateCounter, KvRateCounter] = [await open(), await open()];
  // The bucket exists before either copy counts: two copies creating one bucket at the same moment can race inside
  // JetStream ("subjects overlap with an existing stream"); here each copy's open then finds it.
  await new Kvm(buses.at(-1)!.connection).create(`hatch_rate_${prefix}`, { history: 1, ttl: 20 * MINUTE });
  return pair;
}

rateContract("jetstream kv", kvPair, Boolean(natsUrl));

const leased: LeasedRateCounter[] = [];
rateContract(
  "jetstream kv, leased",
  async (clock) => {
    const [one, two] = await kvPair(clock);
    const pair: [LeasedRateCounter, LeasedRateCounter] = [
      new LeasedRateCounter(one, clock),
      new LeasedRateCounter(two, clock),
    ];
    leased.push(...pair);
    return pair;
  },
  Boolean(natsUrl),
);

/**
 * Windows from a key's first event (the app host's requests per viewer): each key gets a whole window from its first
 * event, whenever that is on the clock; the same from memory and from JetStream, whose copies share one count.
 */
function firstWindowContract(
  kind: string,
  pair: (clock: () => number) => Promise<[RateCounter, RateCounter]>,
  enabled: boolean,
) {
  describe.skipIf(!enabled)(`rate counter, windows from the first event: ${kind}`, () => {
    test("a window runs a whole window from the key's first event; Retry-After counts from it", async () => {
      // 16 min 40 s: a clock minute would end 20 s from now, this key's window ends 60 s from now.
      let now = 1_000_000;
      const [counter] = await pair(() => now);
      const key = `viewer-${crypto.randomUUID()}`;
      for (let i = 0; i < 3; i++) expect((await counter.take(key, 3, MINUTE)).allowed).toBe(true);
      now += 15_000;
      expect(await counter.take(key, 3, MINUTE)).toEqual({ allowed: false, retryAfterSeconds: 45 });
      now += 44_999;
      expect(await counter.take(key, 3, MINUTE)).toEqual({ allowed: false, retryAfterSeconds: 1 });
      expect(await counter.peek(key, MINUTE)).toBe(3);
      now += 1;
      expect(await counter.peek(key, MINUTE)).toBe(0);
      // A new window from this event: three more, then refused for a whole minute.
      for (let i = 0; i < 3; i++) expect((await counter.take(key, 3, MINUTE)).allowed).toBe(true);
      expect(await counter.take(key, 3, MINUTE)).toEqual({ allowed: false, retryAfterSeconds: 60 });
      expect((await counter.take(`other-${key}`, 3, MINUTE)).allowed).toBe(true);
    });

    test("release and reset act on the key's current window", async () => {
      const now = 7 * MINUTE + 30_000;
      const [counter] = await pair(() => now);
      const key = `viewer-${crypto.randomUUID()}`;
      for (let i = 0; i < 2; i++) await counter.take(key, 2, MINUTE);
      await counter.release(key, MINUTE);
      expect(await counter.peek(key, MINUTE)).toBe(1);
      await counter.reset(key, MINUTE);
      expect(await counter.peek(key, MINUTE)).toBe(0);
      expect((await counter.take(key, 2, MINUTE)).allowed).toBe(true);
      expect(await counter.peek(key, MINUTE)).toBe(1);
    });

    test("copies share the counts, at once too", async () => {
      let now = 50 * MINUTE + 10_000;
      const [one, two] = await pair(() => now);
      const key = `viewer-${crypto.randomUUID()}`;
      expect((await one.take(key, 2, MINUTE)).allowed).toBe(true);
      now += 30_000;
      expect((await two.take(key, 2, MINUTE)).allowed).toBe(true);
      const third = await one.take(key, 2, MINUTE);
      // In memory each copy counts alone (dev runs one); in JetStream the window the first copy started is shared.
      expect(third).toEqual(
        kind === "memory" ? { allowed: true, retryAfterSeconds: 0 } : { allowed: false, retryAfterSeconds: 30 },
      );
      const burst = `burst-${crypto.randomUUID()}`;
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 ? one : two).take(burst, 5, MINUTE)),
      );
      expect(results.filter((r) => r.allowed).length).toBe(kind === "memory" ? 10 : 5);
    });
  });
}

firstWindowContract(
  "memory",
  async (clock) => [new MemoryRateCounter(clock, undefined, "first"), new MemoryRateCounter(clock, undefined, "first")],
  true,
);
firstWindowContract("jetstream kv", (clock) => kvPair(clock, "first"), Boolean(natsUrl));

test("a leased counter takes a counter of clock windows only", () => {
  expect(
    () => new LeasedRateCounter(new KvRateCounter(async () => ({}) as KV, undefined, undefined, undefined, "first")),
  ).toThrow("clock windows only");
});

describe.skipIf(!natsUrl)("rate counter: a hot key, leased", () => {
  // The gateway counts every tool call against its grant and its user: one key takes every call of a busy user. With
  // leases most calls are counted from memory, none is lost across copies, and the limit still holds.
  test("a burst on one key from two copies costs a few writes, and every event is in the shared count", async () => {
    const [kvOne, kvTwo] = await kvPair(Date.now);
    const one = new LeasedRateCounter(kvOne);
    const two = new LeasedRateCounter(kvTwo);
    leased.push(one, two);
    const key = `hot-${crypto.randomUUID()}`;
    const before = writes.count;
    let allowed = 0;
    for (let round = 0; round < 50; round++) {
      const results = await Promise.all(
        Array.from({ length: 32 }, (_, i) => (i % 2 ? one : two).take(key, 1_000_000, MINUTE)),
      );
      allowed += results.filter((r) => r.allowed).length;
    }
    expect(allowed).toBe(1_600);
    // The plain counter writes once per event (1,600) and more on lost races.
    expect(writes.count - before).toBeLessThan(100);
    // Unspent leases go back: the shared count is exactly the events let through.
    await Promise.all([one.flush(), two.flush()]);
    expect(await kvOne.peek(key, MINUTE)).toBe(1_600);
  });

  test("near the limit leases shrink to one: copies never let more through than the limit, and counts stay exact", async () => {
    const [kvOne, kvTwo] = await kvPair(Date.now);
    const one = new LeasedRateCounter(kvOne);
    const two = new LeasedRateCounter(kvTwo);
    leased.push(one, two);
    const key = `limit-${crypto.randomUUID()}`;
    let allowed = 0;
    for (let round = 0; round < 40; round++) {
      const results = await Promise.all(
        Array.from({ length: 32 }, (_, i) => (i % 2 ? one : two).take(key, 1_000, MINUTE)),
      );
      allowed += results.filter((r) => r.allowed).length;
    }
    expect(allowed).toBeLessThanOrEqual(1_000);
    // What one copy holds unspent is at most a sixteenth of the room left when it was leased.
    expect(allowed).toBeGreaterThan(1_000 - 1_000 / 16);
    await Promise.all([one.flush(), two.flush()]);
    expect(await kvOne.peek(key, MINUTE)).toBe(allowed);
  });
});

afterAll(async () => {
  for (const counter of leased) counter.close();
  for (const bus of buses) {
    await new Kvm(bus.connection)
      .open(`hatch_rate_${bus.prefix}`)
      .then((kv) => kv.destroy())
      .catch(() => undefined);
    await bus.drain();
  }
});
