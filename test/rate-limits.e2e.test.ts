import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { isNatsBus, KvRateCounter } from "@hatch/platform";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

// Tool calls a minute per connection and per user at the gateway, counted where every gateway copy sees them (the
// JetStream key-value bucket on NATS; memory in the embedded default): past the limit a call is refused, changes
// nothing, and says when to try again.
for (const mode of MODES) {
  describe(`tool call rate limits (${mode})`, () => {
    let hatch: TestHatch;

    beforeAll(async () => {
      hatch = await startTestHatch(mode, {
        gatewayConfig: { toolCallsPerMinutePerGrant: 3, toolCallsPerMinutePerUser: 5 },
      });
    }, 60_000);
    afterAll(async () => {
      await hatch?.stop();
    });

    test("a connection gets its calls a minute, then limit_exceeded with the seconds to wait; the user's other connection gets the rest", async () => {
      // Counting is per clock minute: start away from a minute's end, so all the calls below fall in one window.
      while (Date.now() % 60_000 > 50_000) await Bun.sleep(250);
      const user = await userWithToken(hatch, { name: "Rate" });
      const first = await connectClient(hatch, user.accessToken);
      for (let i = 0; i < 3; i++)
        expect((await first.callTool({ name: "whoami", arguments: {} })).isError).not.toBe(true);
      const refused = await first.callTool({ name: "whoami", arguments: {} });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toMatch(
        /^Too many tool calls on this connection: at most 3 a minute\. Nothing was done; try again in \d+ s\. \(limit_exceeded\)$/,
      );

      const other = await hatch.gateway.auth.issueTokenForScript({ email: user.email });
      const second = await connectClient(hatch, other.accessToken);
      for (let i = 0; i < 2; i++)
        expect((await second.callTool({ name: "whoami", arguments: {} })).isError).not.toBe(true);
      const userRefused = await second.callTool({ name: "whoami", arguments: {} });
      expect(textOf(userRefused)).toMatch(
        /^Too many tool calls for this user across all connections: at most 5 a minute/,
      );

      const someoneElse = await userWithToken(hatch, { name: "Other" });
      const third = await connectClient(hatch, someoneElse.accessToken);
      expect((await third.callTool({ name: "whoami", arguments: {} })).isError).not.toBe(true);
      await Promise.all([first.close(), second.close(), third.close()]);
    }, 90_000);
  });
}

// A busy user's calls are counted without a key-value write each (leases from the shared count, shared/platform/src/rate/
// leased.ts): before, every call read and compare-and-set its grant's and its user's key, and concurrent calls of one
// user mostly lost that race and tried again.
describe.skipIf(!MODES.includes("real"))("tool call rate limits on a busy connection (real)", () => {
  let hatch: TestHatch;

  beforeAll(async () => {
    hatch = await startTestHatch("real", {
      gatewayConfig: { toolCallsPerMinutePerGrant: 10_000, toolCallsPerMinutePerUser: 10_000 },
    });
  }, 60_000);
  afterAll(async () => {
    await hatch?.stop();
  });

  test("100 concurrent calls of one connection all go through and are all counted, with far fewer writes than calls", async () => {
    while (Date.now() % 60_000 > 50_000) await Bun.sleep(250);
    const user = await userWithToken(hatch, { name: "Busy" });
    const client = await connectClient(hatch, user.accessToken);
    const results = await Promise.all(
      Array.from({ length: 100 }, () => client.callTool({ name: "whoami", arguments: {} })),
    );
    expect(results.filter((r) => r.isError === true).map(textOf)).toEqual([]);
    if (!isNatsBus(hatch.bus)) throw new Error("real mode runs on NATS");
    const jsm = await jetstreamManager(hatch.bus.connection);
    const { state } = await jsm.streams.info(`KV_hatch_rate_${hatch.bus.prefix}`);
    // Every write to a key-value entry is a message of its stream: one per call and key (200) before, a few leases now.
    expect(state.last_seq).toBeLessThan(50);
    // And none is lost: once the gateway gives back its unspent lease (after a second without calls), the shared count
    // of the connection's minute is exactly the calls made. (Before, calls that lost the race 8 times went uncounted.)
    const grant = JSON.parse(Buffer.from(user.accessToken.split(".")[1]!, "base64url").toString()).gid as string;
    const bus = hatch.bus;
    const shared = new KvRateCounter(() => new Kvm(bus.connection).open(`hatch_rate_${bus.prefix}`));
    let counted = -1;
    for (let i = 0; i < 40 && counted !== 100; i++) {
      await Bun.sleep(250);
      counted = await shared.peek(`tools:grant:${grant}`, 60_000);
    }
    expect(counted).toBe(100);
    await client.close();
  }, 90_000);
});
