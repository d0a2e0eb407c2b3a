import { describe, expect, test } from "bun:test";
import { createLogger, createNatsBus, deleteRateBucket, type NatsBus } from "@hatch/platform";
import { randomId } from "@hatch/contracts";
import { DataError } from "../src/http/answers.ts";
import { appsRateCounter } from "../src/context.ts";
import { ViewerRateLimit } from "../src/http/caller.ts";

// The app host's data limit with NATS: every app host copy counts in the same JetStream key-value bucket, so a viewer
// spreading requests over copies still gets one limit (not one per copy).
const natsUrl = process.env.TEST_NATS_URL;
const logger = createLogger({ level: "error" });

describe.skipIf(!natsUrl)("the shared data limit (real NATS)", () => {
  test("two app host copies hold one limit per viewer; another viewer is not affected", async () => {
    const prefix = `rate_${randomId(6).replace(/[^A-Za-z0-9]/g, "x")}`;
    const buses: NatsBus[] = [
      await createNatsBus({ url: natsUrl!, prefix }),
      await createNatsBus({ url: natsUrl!, prefix }),
    ];
    try {
      const [one, two] = buses.map(
        (bus) => new ViewerRateLimit(appsRateCounter(bus), { perMinute: 3, scope: "data", log: logger }),
      );
      await one!.take("viewer-a");
      await two!.take("viewer-a");
      await one!.take("viewer-a");
      const refused = await two!.take("viewer-a").catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(DataError);
      expect((refused as DataError).code).toBe("limit_exceeded");
      expect((refused as DataError).message).toMatch(/at most 3 a minute\. Try again in \d+ s\./);
      expect(Number((refused as DataError).headers["Retry-After"])).toBeGreaterThan(0);
      await two!.take("viewer-b");
      // AI calls are counted in the same bucket under their own scope: the data requests above do not use them up.
      const ai = new ViewerRateLimit(appsRateCounter(buses[1]!), { perMinute: 1, scope: "ai", log: logger });
      await ai.take("viewer-a");
      expect(await ai.take("viewer-a").catch((error: unknown) => (error as DataError).code)).toBe("limit_exceeded");
    } finally {
      await deleteRateBucket(buses[0]!, "apps").catch(() => {});
      for (const bus of buses) await bus.drain();
    }
  });
});

test("a counter that cannot answer lets the request through (a limit is not worth an outage)", async () => {
  const broken = {
    take: () => Promise.reject(new Error("no JetStream")),
    peek: async () => 0,
    release: async () => {},
    reset: async () => {},
    close() {},
  };
  const limiter = new ViewerRateLimit(broken, { perMinute: 1, scope: "data", log: logger });
  await limiter.take("viewer");
  await limiter.take("viewer");
  expect(await limiter.take("viewer")).toBeUndefined();
});
