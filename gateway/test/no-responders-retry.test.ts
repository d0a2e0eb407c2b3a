import { describe, expect, test } from "bun:test";
import {
  BusError,
  callRpc,
  createLogger,
  createMemoryBus,
  createNatsBus,
  startService,
  type Bus,
  type RunningService,
} from "@hatch/platform";
import { deriveKey } from "@hatch/contracts";
import { z } from "zod";
import { AccountSessions } from "../src/mcp/accounts.ts";
import { callServiceRpc, retryOnceOnNoResponders, websiteCaller } from "../src/services.ts";

// The gateway sends a call once more when NATS answered "no responders": no copy of the service was subscribed where
// the call was routed (a copy restarting, a rolling deploy), so it never ran and a second try is safe. A timeout is
// never sent again (the call may have run). Real buses (in-process and, with TEST_NATS_URL, NATS) and a real service
// runtime; the service starts the moment the first try has found nobody.

const logger = createLogger({ level: "silent" });
const contextKey = deriveKey("no-responders-test-secret-0123456789abcdef", "ctx");
const natsUrl = process.env.TEST_NATS_URL;
const user = { id: "usr_1", email: "a@example.com", emailVerified: true, name: "A" };
const HealthSchema = z.object({ service: z.string(), version: z.string() });

/** The bus as the gateway holds it, except that the service starts right after the first request found no copy. */
function startingOnFirstMiss(bus: Bus, counts: { requests: number; misses: number }) {
  let service: RunningService | undefined;
  const wrapped: Bus = {
    ...bus,
    async request(subject, data, options) {
      counts.requests++;
      try {
        return await bus.request(subject, data, options);
      } catch (error) {
        if (error instanceof BusError && error.code === "no_responders" && !service) {
          counts.misses++;
          service = await startService({
            name: "domains",
            version: "test",
            bus,
            contextKey,
            contracts: [],
            tools: [],
            logger,
          });
        }
        throw error;
      }
    },
  };
  return { bus: wrapped, stop: () => service?.stop() };
}

const buses: Array<[string, () => Promise<Bus>]> = [["in-process", async () => createMemoryBus({ logger })]];
if (natsUrl)
  buses.push([
    "NATS",
    () => createNatsBus({ url: natsUrl, prefix: `retry${Math.random().toString(36).slice(2, 10)}` }),
  ]);

describe.each(buses)("a call that finds no responders (%s)", (_name, open) => {
  test("is sent once more and answered by the copy that came up", async () => {
    const bus = await open();
    const counts = { requests: 0, misses: 0 };
    const gatewayBus = startingOnFirstMiss(bus, counts);
    try {
      const deps = { bus: gatewayBus.bus, contextKey, accounts: new AccountSessions(gatewayBus.bus, contextKey) };
      const caller = websiteCaller(user, { scope: "read", client: "dashboard" });
      const result = await callServiceRpc(deps, "domains", "health", {}, HealthSchema, caller, { account: false });
      expect(result).toEqual({ service: "domains", version: "test" });
      expect(counts).toEqual({ requests: 2, misses: 1 });
    } finally {
      await gatewayBus.stop();
      await bus.drain();
    }
  });

  test("is sent only once more: with no copy at all it is `unavailable`", async () => {
    const bus = await open();
    let requests = 0;
    const counting: Bus = { ...bus, request: (...args) => (requests++, bus.request(...args)) };
    try {
      const deps = { bus: counting, contextKey, accounts: new AccountSessions(counting, contextKey) };
      const caller = websiteCaller(user, { scope: "read", client: "dashboard" });
      const call = callServiceRpc(deps, "billing", "health", {}, HealthSchema, caller, { account: false });
      await expect(call).rejects.toMatchObject({ code: "unavailable" });
      expect(requests).toBe(2);
    } finally {
      await bus.drain();
    }
  });

  test("a timeout is never sent again (the call may have run)", async () => {
    const bus = await open();
    let delivered = 0;
    // A copy that takes the call and never answers.
    bus.subscribe("rpc.orgs.>", () => void delivered++, { queue: "orgs" });
    await bus.flush();
    try {
      const call = callRpcWithShortDeadline(bus);
      await expect(call).rejects.toMatchObject({ code: "unavailable" });
      expect(delivered).toBe(1);
    } finally {
      await bus.drain();
    }
  });
});

/** The gateway's rpc path (callRpc on the retrying bus) with a 200 ms deadline, so the timeout case ends quickly. */
function callRpcWithShortDeadline(bus: Bus) {
  return callRpc(retryOnceOnNoResponders(bus), "orgs", "health", {}, HealthSchema, { timeoutMs: 200 });
}
