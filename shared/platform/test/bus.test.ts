import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  BusError,
  createMemoryBus,
  createNatsBus,
  decodeJson,
  encodeJson,
  subjectMatches,
  type Bus,
} from "@hatch/platform";
import { ToolError } from "@hatch/contracts";

const natsUrl = process.env.TEST_NATS_URL;
let counter = 0;
const unique = () => `bt${process.env.HATCH_TEST_RUN}${++counter}`;
const text = (data: Uint8Array) => new TextDecoder().decode(data);

test("subject wildcards follow NATS rules", () => {
  expect(subjectMatches("tools.orgs.*", "tools.orgs.whoami")).toBe(true);
  expect(subjectMatches("tools.orgs.*", "tools.orgs.whoami.x")).toBe(false);
  expect(subjectMatches("tools.>", "tools.orgs.whoami")).toBe(true);
  expect(subjectMatches("tools.>", "tools")).toBe(false);
  expect(subjectMatches("a.b", "a.b")).toBe(true);
  expect(subjectMatches("a.b", "a.c")).toBe(false);
});

/** One contract, two implementations: every case here runs over the in-process bus and over nats-server. */
function busContract(name: string, make: (prefix: string) => Promise<Bus>, enabled: boolean) {
  describe.skipIf(!enabled)(`bus contract: ${name}`, () => {
    let a: Bus;
    let b: Bus;
    beforeAll(async () => {
      const prefix = unique();
      a = await make(prefix);
      b = name === "memory" ? a : await make(prefix);
    });
    afterAll(async () => {
      await a.drain();
      if (b !== a) await b.drain();
    });

    test("request-reply carries data and headers both ways", async () => {
      const s = unique();
      b.subscribe(`${s}.echo`, (msg) => ({
        data: encodeJson({ got: decodeJson(msg.data), rid: msg.headers["hatch-request-id"] }),
        headers: { "x-side": "b" },
      }));
      await b.flush();
      const reply = await a.request(`${s}.echo`, encodeJson({ n: 1 }), {
        timeoutMs: 2000,
        headers: { "hatch-request-id": "r-1" },
      });
      expect(decodeJson(reply.data)).toEqual({ got: { n: 1 }, rid: "r-1" });
      expect(reply.headers["x-side"]).toBe("b");
    });

    test("no subscriber fails at once with no_responders", async () => {
      const err = await a.request(`${unique()}.nobody`, "x", { timeoutMs: 5000 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BusError);
      expect((err as BusError).code).toBe("no_responders");
    });

    test("a handler that never answers times out", async () => {
      const s = `${unique()}.slow`;
      b.subscribe(s, () => new Promise<void>(() => {}));
      await b.flush();
      const err = await a.request(s, "x", { timeoutMs: 150 }).catch((e: unknown) => e);
      expect((err as BusError).code).toBe("timeout");
    });

    test("a queue group delivers each message to one member; plain subscribers get all", async () => {
      const s = unique();
      const seen = { q1: 0, q2: 0, plain: 0 };
      b.subscribe(`${s}.work`, () => void seen.q1++, { queue: "workers" });
      b.subscribe(`${s}.work`, () => void seen.q2++, { queue: "workers" });
      b.subscribe(`${s}.work`, () => void seen.plain++);
      await b.flush();
      for (let i = 0; i < 20; i++) a.publish(`${s}.work`, "x");
      await a.flush();
      await waitFor(() => seen.plain === 20 && seen.q1 + seen.q2 === 20);
      expect(seen.q1 + seen.q2).toBe(20);
      expect(seen.plain).toBe(20);
    });

    test("wildcard subscriptions see the subject without the prefix", async () => {
      const s = unique();
      b.subscribe(`${s}.tools.*`, (msg) => ({ data: msg.subject }));
      await b.flush();
      const reply = await a.request(`${s}.tools.whoami`, "", { timeoutMs: 2000 });
      expect(text(reply.data)).toBe(`${s}.tools.whoami`);
    });

    test("a throwing handler does not take the bus down", async () => {
      const s = unique();
      b.subscribe(`${s}.boom`, () => {
        throw new Error("boom");
      });
      b.subscribe(`${s}.ok`, () => ({ data: "fine" }));
      await b.flush();
      const err = await a.request(`${s}.boom`, "", { timeoutMs: 150 }).catch((e: unknown) => e);
      expect((err as BusError).code).toBe("timeout");
      expect(text((await a.request(`${s}.ok`, "", { timeoutMs: 2000 })).data)).toBe("fine");
    });

    test("unsubscribe stops delivery", async () => {
      const s = `${unique()}.gone`;
      const sub = b.subscribe(s, () => ({ data: "here" }));
      await b.flush();
      sub.unsubscribe();
      await b.flush();
      const err = await a.request(s, "", { timeoutMs: 1000 }).catch((e: unknown) => e);
      expect((err as BusError).code).toBe("no_responders");
    });
  });
}

busContract("memory", async () => createMemoryBus(), true);
busContract("nats", async (prefix) => createNatsBus({ url: natsUrl!, prefix }), Boolean(natsUrl));

test("prefixes keep two deployments apart on one nats-server", async () => {
  if (!natsUrl) return;
  const one = await createNatsBus({ url: natsUrl, prefix: unique() });
  const two = await createNatsBus({ url: natsUrl, prefix: unique() });
  one.subscribe("tools.orgs.whoami", () => ({ data: "one" }));
  await one.flush();
  const err = await two.request("tools.orgs.whoami", "", { timeoutMs: 1000 }).catch((e: unknown) => e);
  expect((err as BusError).code).toBe("no_responders");
  await Promise.all([one.drain(), two.drain()]);
});

test("a request over the bus's size limit is refused before sending, with limit_exceeded and the manifest hint", async () => {
  if (!natsUrl) return;
  const bus = await createNatsBus({ url: natsUrl, prefix: unique(), maxPayloadBytes: 1024 });
  try {
    let received = 0;
    bus.subscribe("tools.apps.publish", () => {
      received++;
      return { data: "ok" };
    });
    await bus.flush();
    const small = await bus.request("tools.apps.publish", "x".repeat(900), {
      timeoutMs: 2000,
      headers: { "hatch-request-id": "r-1" },
    });
    expect(text(small.data)).toBe("ok");
    // 1000 bytes of data fit; with the headers NATS sends, the message does not.
    const err = await bus
      .request("tools.apps.publish", "x".repeat(1000), {
        timeoutMs: 2000,
        headers: { "hatch-request-id": "r".repeat(40) },
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ToolError);
    expect((err as ToolError).code).toBe("limit_exceeded");
    expect((err as ToolError).message).toContain("over the bus limit of 1 KB");
    expect((err as ToolError).message).toContain("upload: true");
    expect(() => bus.publish("events.x", new Uint8Array(2048))).toThrow("over the bus limit");
    expect(received).toBe(1);
  } finally {
    await bus.drain();
  }
});

test("the server's max_payload applies when no lower limit is set", async () => {
  if (!natsUrl) return;
  const bus = await createNatsBus({ url: natsUrl, prefix: unique() });
  try {
    const limit = bus.connection.info?.max_payload ?? 0;
    expect(limit).toBeGreaterThan(0);
    const err = await bus
      .request("tools.apps.publish", new Uint8Array(limit + 1), { timeoutMs: 2000 })
      .catch((e: unknown) => e);
    expect((err as ToolError).code).toBe("limit_exceeded");
  } finally {
    await bus.drain();
  }
});

test("a drained bus refuses new work with closed", async () => {
  const bus = createMemoryBus();
  await bus.drain();
  const err = await bus.request("x", "", { timeoutMs: 100 }).catch((e: unknown) => e);
  expect((err as BusError).code).toBe("closed");
});

async function waitFor(check: () => boolean, ms = 3000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await Bun.sleep(5);
  }
}
