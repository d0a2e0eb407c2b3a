import { afterEach, describe, expect, test } from "bun:test";
import { checkLimit, createLogger, createMemoryBus, encodeJson, EntitlementsCache, type Bus } from "@hatch/platform";
import { isToolError, limitsOf, type Entitlements } from "@hatch/contracts";

const logger = createLogger({ level: "error" });
const SETTINGS = "http://localhost:3000/dashboard/billing";

function entitlements(plan: Entitlements["plan"], seats = 1): Entitlements {
  return {
    accountId: "acct_1",
    plan,
    state: "active",
    seats,
    limits: limitsOf(plan, "active", seats),
    settingsUrl: SETTINGS,
  };
}

/** A billing stand-in on the bus answering `rpc.billing.entitlements` as the service does, counting the questions. */
function answerEntitlements(bus: Bus, answer: () => Entitlements) {
  const asked: string[] = [];
  bus.subscribe("rpc.billing.entitlements", (msg) => {
    asked.push(JSON.parse(new TextDecoder().decode(msg.data)).input.accountId);
    return { data: encodeJson({ ok: true, result: answer() }) };
  });
  return asked;
}

describe("EntitlementsCache", () => {
  let bus: Bus;
  let cache: EntitlementsCache;
  afterEach(async () => {
    cache.close();
    await bus.drain();
  });

  test("asks billing once per account while fresh, and again once billing announces a plan change", async () => {
    bus = createMemoryBus({ logger });
    cache = new EntitlementsCache(bus, logger);
    let plan: Entitlements["plan"] = "free";
    const asked = answerEntitlements(bus, () => entitlements(plan));
    expect((await cache.get("acct_1"))?.plan).toBe("free");
    expect((await cache.get("acct_1"))?.plan).toBe("free");
    expect(asked).toEqual(["acct_1"]);

    plan = "pro";
    bus.publish("events.billing.account.plan_changed", encodeJson({ account: "acct_1" }));
    await bus.flush();
    expect((await cache.get("acct_1"))?.plan).toBe("pro");
    expect(asked).toEqual(["acct_1", "acct_1"]);
  });

  test("while billing cannot answer, limits are not enforced (null), remembered briefly; a plan change forgets it", async () => {
    bus = createMemoryBus({ logger });
    cache = new EntitlementsCache(bus, logger);
    expect(await cache.get("acct_1")).toBeNull();
    const asked = answerEntitlements(bus, () => entitlements("free"));
    // One failed ask stands for a few seconds: an outage is not a bus request (and a warning) per write.
    expect(await cache.get("acct_1")).toBeNull();
    expect(asked).toEqual([]);
    bus.publish("events.billing.account.plan_changed", encodeJson({ account: "acct_1" }));
    await bus.flush();
    expect((await cache.get("acct_1"))?.plan).toBe("free");
    expect(asked).toEqual(["acct_1"]);
  });
});

describe("checkLimit", () => {
  const refusal = (run: () => void) => {
    try {
      run();
      return null;
    } catch (error) {
      return isToolError(error)
        ? { code: error.code, message: error.message }
        : { code: "thrown", message: String(error) };
    }
  };

  test("refuses with needs_payment naming the limit, the plan and the settings page, only past the limit", () => {
    const free = entitlements("free");
    expect(refusal(() => checkLimit(free, "apps", 2))).toBeNull();
    const full = refusal(() => checkLimit(free, "apps", 3));
    expect(full?.code).toBe("needs_payment");
    expect(full?.message).toContain("The free plan allows 3 apps, and this account has 3.");
    expect(full?.message).toContain(SETTINGS);
    expect(refusal(() => checkLimit(free, "seats", 2, 2))?.code).toBe("needs_payment");
    expect(refusal(() => checkLimit(free, "seats", 1, 2))).toBeNull();
  });

  test("a plan without the thing at all says it does not include it", () => {
    const none = refusal(() => checkLimit(entitlements("free"), "customDomains", 0));
    expect(none?.code).toBe("needs_payment");
    expect(none?.message).toStartWith("The free plan does not include custom domains. Nothing was changed.");
    expect(none?.message).toContain(SETTINGS);
  });

  test("a limit that is null, and unknown entitlements, allow anything", () => {
    expect(refusal(() => checkLimit(entitlements("enterprise"), "apps", 1_000_000))).toBeNull();
    expect(refusal(() => checkLimit(null, "apps", 1_000_000))).toBeNull();
  });

  test("a team plan's seats are the seats paid for; suspended and canceled plans fall back to free", () => {
    expect(limitsOf("team", "active", 12).seats).toBe(12);
    expect(limitsOf("pro", "canceled", 1)).toEqual(limitsOf("free", "active", 1));
    expect(limitsOf("pro", "past_due", 1)).toEqual(limitsOf("pro", "active", 1));
  });
});
