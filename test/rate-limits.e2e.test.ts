import { afterAll, beforeAll, describe, expect, test } from "bun:test";
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
