import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { connectClient, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

for (const mode of MODES) {
  describe(`request and trace ids cross the bus (${mode})`, () => {
    let hatch: TestHatch;
    const lines: Record<string, unknown>[] = [];
    beforeAll(async () => {
      hatch = await startTestHatch(mode, { logWrite: (line) => lines.push(JSON.parse(line)) });
    }, 60_000);
    afterAll(async () => {
      await hatch?.stop();
    });

    test("one tool call logs the same request id and trace id in the gateway and in the service", async () => {
      const user = await userWithToken(hatch);
      const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
      const client = await connectClient(hatch, user.accessToken, undefined, {
        "x-request-id": "req-trace-check-1",
        traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
      });
      await client.callTool({ name: "whoami", arguments: {} });
      await client.close();
      const mine = lines.filter((l) => l.rid === "req-trace-check-1" && l.msg === "tool call");
      const gateway = mine.find((l) => l.service === "gateway");
      const orgs = mine.find((l) => l.service === "orgs");
      expect(gateway).toMatchObject({ tool: "whoami", trace: traceId });
      expect(orgs).toMatchObject({ tool: "whoami", trace: traceId, outcome: "ok" });
      // Nothing secret reaches a log line: no bearer token, no signed context.
      const all = JSON.stringify(lines);
      expect(all).not.toContain(user.accessToken);
      expect(all).not.toContain(user.refreshToken);
    });

    test("an invalid incoming request id is replaced, not trusted", async () => {
      const user = await userWithToken(hatch);
      const client = await connectClient(hatch, user.accessToken, undefined, {
        "x-request-id": "bad id with spaces <script>",
      });
      await client.callTool({ name: "whoami", arguments: {} });
      await client.close();
      expect(lines.some((l) => typeof l.rid === "string" && l.rid.includes("<script>"))).toBe(false);
    });
  });
}
