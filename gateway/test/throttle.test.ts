import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createNatsBus, KvRateCounter, type NatsBus, type RateCounter } from "@hatch/platform";
import { Kvm } from "@nats-io/kv";
import { Elysia } from "elysia";
import { createHarness, registerClient, type Harness, type HarnessOptions } from "./oauth-harness.ts";

// Throttling locks the source, never the person: the clock is injected (h.clock) and the per-email delay is
// recorded (h.delays) instead of waited, so nothing here depends on time passing. Every case runs on the in-memory
// counter (`bun run dev`) and, with TEST_NATS_URL, on the JetStream key-value counter that gateway copies share.

// Every sign-in hashes a password (argon2id): on a busy machine a case of twenty takes a while.
setDefaultTimeout(60_000);
const PASSWORD = "correct horse battery";
const MINUTE = 60_000;
const natsUrl = process.env.TEST_NATS_URL;
const MODES = natsUrl ? (["memory", "nats"] as const) : (["memory"] as const);
let bus: NatsBus | undefined;
const buckets: string[] = [];

/**
 * How long a count may take here before the counter counts in its copy instead. These cases are about what the shared
 * count decides, so a machine busy with other tests must not send them down the degraded path (a count then starts
 * again in each copy, and ten parallel wrong passwords saw only 5 delays where 7 are due). Degrading has its own tests
 * (test/nats-cluster.test.ts).
 */
const COUNT_WAIT_MS = 30_000;

/** A fresh KV bucket for this run, made before any case counts: a counter factory per harness, each copy its own. */
async function sharedCounter(): Promise<(now: () => number) => RateCounter> {
  bus ??= await createNatsBus({ url: natsUrl! });
  const name = `hatch_rate_test_${crypto.randomUUID().slice(0, 8)}`;
  buckets.push(name);
  const connection = bus.connection;
  await new Kvm(connection).create(name, { history: 1, ttl: 4 * 60 * 60_000 });
  return (now) => new KvRateCounter(() => new Kvm(connection).open(name), now, undefined, COUNT_WAIT_MS);
}

afterAll(async () => {
  if (!bus) return;
  for (const name of buckets) await (await new Kvm(bus.connection).open(name)).destroy().catch(() => {});
  await bus.drain();
});

for (const mode of MODES) {
  describe(`throttles on the ${mode} counter`, () => {
    const harness = async (options: HarnessOptions = {}) =>
      createHarness({ ...options, ...(mode === "nats" ? { rateCounter: await sharedCounter() } : {}) });

    let h: Harness;
    beforeAll(async () => {
      h = await harness();
    }, 60_000);
    afterAll(async () => {
      await h.close();
    });

    let people = 0;
    async function owner(): Promise<string> {
      const email = `owner${++people}@example.com`;
      const response = await h.browser().signUp(email);
      if (response.status !== 303) throw new Error(`sign-up failed: ${response.status}`);
      return email;
    }

    describe("sign-in", () => {
      test("an attacker failing 10× from address A is only slowed there; the owner signs in from A and from B", async () => {
        const email = await owner();
        const attacker = h.browser("203.0.113.10");
        const delaysBefore = h.delays.length;
        const statuses: number[] = [];
        for (let i = 0; i < 10; i++) statuses.push((await attacker.signIn(email, `wrong ${i}`)).status);
        expect(statuses).toEqual(Array(10).fill(401));
        // The per-email delay from the 4th failure, the per-network one (longer) from the 6th; capped at 8 s.
        expect(h.delays.slice(delaysBefore)).toEqual([250, 500, 1_000, 2_000, 4_000, 8_000, 8_000]);

        // The owner on the attacker's own network: held like the attacker, never refused.
        const sameNetwork = await h.browser("203.0.113.10").signIn(email, PASSWORD);
        expect(sameNetwork.status).toBe(303);
        expect(h.delays.at(-1)).toBe(8_000);
        // From anywhere else only the per-email delay applies: at most 3 s.
        const delaysElsewhere = h.delays.length;
        expect((await h.browser("198.51.100.20").signIn(email, PASSWORD)).status).toBe(303);
        expect(h.delays.slice(delaysElsewhere).every((ms) => ms <= 3_000)).toBe(true);
        // Another email from A is not slowed by A's failures on this one (below the network's own threshold).
        const other = h.delays.length;
        expect((await h.browser("203.0.113.10").signIn(await owner(), PASSWORD)).status).toBe(303);
        expect(h.delays.length).toBe(other);
      });

      test("parallel attempts from one address see each other: each is held, the longest at the cap", async () => {
        const email = await owner();
        const delaysBefore = h.delays.length;
        const responses = await Promise.all(
          Array.from({ length: 10 }, (_, i) => h.browser("203.0.113.60").signIn(email, `wrong ${i}`)),
        );
        expect(responses.map((r) => r.status)).toEqual(Array(10).fill(401));
        const delays = h.delays.slice(delaysBefore);
        expect(delays.length).toBeGreaterThanOrEqual(7);
        // Past the per-email cap (3 s): the network's own rule held them. (On the KV counter a count read right after
        // a parallel take may lag a little, so the exact maximum is not fixed.)
        expect(Math.max(...delays)).toBeGreaterThanOrEqual(4_000);
        expect((await h.browser("203.0.113.60").signIn(email, PASSWORD)).status).toBe(303);
      });

      test("failures from many addresses on one email only slow it down, growing and capped, never a lock", async () => {
        const email = await owner();
        const delaysBefore = h.delays.length;
        for (let i = 0; i < 12; i++) expect((await h.browser().signIn(email, `wrong ${i}`)).status).toBe(401);
        const delays = h.delays.slice(delaysBefore);
        expect(delays).toEqual([250, 500, 1_000, 2_000, 3_000, 3_000, 3_000, 3_000, 3_000]);
        expect((await h.browser().signIn(email, PASSWORD)).status).toBe(303);
        expect(h.delays.at(-1)).toBe(3_000);
      });

      test("one address failing on many emails is slowed too, and still lets the right password in", async () => {
        const prober = h.browser("203.0.113.30");
        for (let i = 0; i < 20; i++) expect((await prober.signIn(`nobody${i}@example.com`, "wrong")).status).toBe(401);
        const delaysBefore = h.delays.length;
        const signedIn = await prober.signIn(await owner(), PASSWORD);
        expect(signedIn.status).toBe(303);
        expect(h.delays.slice(delaysBefore)).toEqual([1_000]);
      });

      test("the sign-in page states the rule and offers a reset", async () => {
        const page = await (await h.browser().get("/signin")).text();
        expect(page).toContain("Wrong passwords never lock an account");
        expect(page).toContain("The right password always signs in.");
        expect(page).toContain('href="/forgot-password?next=');
      });
    });

    describe("sign-up and client registration per address", () => {
      test("sign-up: 20 attempts an hour per address, then 429 with Retry-After; other addresses go on", async () => {
        const crowd = h.browser("203.0.113.40");
        // Refused attempts count too (they are what probing for taken emails looks like).
        for (let i = 0; i < 20; i++) expect((await crowd.signUp(`crowd${i}@example.com`, "short")).status).toBe(400);
        const limited = await crowd.signUp("crowd-late@example.com");
        expect(limited.status).toBe(429);
        expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
        expect(await limited.text()).toContain("Too many sign-ups from your network");
        expect((await h.browser().signUp(`elsewhere${++people}@example.com`)).status).toBe(303);
        h.clock.now += 60 * MINUTE + 1_000;
        expect((await crowd.signUp("crowd-later@example.com")).status).toBe(303);
      });

      test("/oauth/register: 30 an hour per address, then 429 with Retry-After and an OAuth error body", async () => {
        const from = (address: string) => ({ "x-forwarded-for": address });
        const body = { client_name: "Loop", redirect_uris: ["http://127.0.0.1:9/callback"] };
        for (let i = 0; i < 30; i++) expect((await registerClient(h, body, from("203.0.113.50"))).status).toBe(201);
        const limited = await registerClient(h, body, from("203.0.113.50"));
        expect(limited.status).toBe(429);
        expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
        expect(await limited.json()).toMatchObject({
          error: "temporarily_unavailable",
          error_description: expect.stringContaining("Too many client registrations"),
        });
        expect((await registerClient(h, body, from("203.0.113.51"))).status).toBe(201);
      });

      test("IPv6 addresses count by their /64: a new address in the same block is the same source", async () => {
        const from = (address: string) => ({ "x-forwarded-for": address });
        const body = { client_name: "Loop", redirect_uris: ["http://127.0.0.1:9/callback"] };
        for (let i = 0; i < 30; i++)
          expect((await registerClient(h, body, from(`2001:db8:1:2::${(i + 1).toString(16)}`))).status).toBe(201);
        expect((await registerClient(h, body, from("2001:db8:1:2:ffff:ffff:ffff:ffff"))).status).toBe(429);
        expect((await registerClient(h, body, from("2001:db8:1:3::1"))).status).toBe(201);
      });

      test("without TRUST_PROXY the connection's address counts and X-Forwarded-For is ignored", async () => {
        const direct = await harness({ trustProxy: false });
        const server = new Elysia().use(direct.auth.routes).listen({ port: 0, hostname: "127.0.0.1" });
        try {
          const url = `http://127.0.0.1:${server.server?.port}/oauth/register`;
          const register = (spoofed: string) =>
            fetch(url, {
              method: "POST",
              headers: { "content-type": "application/json", "x-forwarded-for": spoofed },
              body: JSON.stringify({ client_name: "Loop", redirect_uris: ["http://127.0.0.1:9/cb"] }),
            });
          for (let i = 0; i < 30; i++) expect((await register(`192.0.2.${i}`)).status).toBe(201);
          expect((await register("192.0.2.200")).status).toBe(429);
          // In-process requests have no connection address; they are another budget than 127.0.0.1's.
          expect(
            (await registerClient(direct, { client_name: "Other", redirect_uris: ["http://127.0.0.1:9/cb"] })).status,
          ).toBe(201);
        } finally {
          await server.stop(true);
          await direct.close();
        }
      });
    });
  });
}

describe.skipIf(!natsUrl)("throttles across gateway copies", () => {
  test("wrong passwords counted by one copy slow the next attempt on another; the owner still signs in there", async () => {
    const counter = await sharedCounter();
    const startAt = Date.now();
    const [one, two] = [
      await createHarness({ rateCounter: counter, startAt }),
      await createHarness({ rateCounter: counter, startAt }),
    ];
    try {
      const email = "shared-owner@example.com";
      expect((await two.browser().signUp(email)).status).toBe(303);
      for (let i = 0; i < 5; i++)
        expect((await one.browser("203.0.113.90").signIn(email, `wrong ${i}`)).status).toBe(401);
      // Copy two sees copy one's five failures: the same network is held 1 s, then the right password gets in.
      const sameNetwork = two.delays.length;
      expect((await two.browser("203.0.113.90").signIn(email, PASSWORD)).status).toBe(303);
      expect(two.delays.slice(sameNetwork)).toEqual([1_000]);
    } finally {
      await one.close();
      await two.close();
    }
  }, 60_000);
});
