import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createMemoryBus, requestTraced, serveMetrics, type MetricsListener } from "@hatch/platform";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { connectClient, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

// Prometheus metrics: scrape /metrics before and after some tool calls and app host requests, and check the counters
// moved by exactly what was done; /metrics is closed unless a token is set (or it is `bun run dev`).

const METRICS_TOKEN = "metrics-token-for-tests-0123456789";

/** `name{a="x",b="y"} value` lines → value by the series as written. */
function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

async function scrape(url: string, token = METRICS_TOKEN): Promise<Map<string, number>> {
  const response = await fetch(url, { headers: { Authorization: `Bearer ${token}` } });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toContain("text/plain");
  return parse(await response.text());
}

const moved = (before: Map<string, number>, after: Map<string, number>, series: string) =>
  (after.get(series) ?? 0) - (before.get(series) ?? 0);

for (const mode of MODES) {
  describe(`/metrics of the gateway (${mode})`, () => {
    let hatch: TestHatch;
    beforeAll(async () => {
      hatch = await startTestHatch(mode, { gatewayConfig: { metricsToken: METRICS_TOKEN } });
    }, 60_000);
    afterAll(async () => {
      await hatch?.stop();
    });

    test("tool calls, their outcomes and latency, services' calls, outbox lag and app host requests are counted", async () => {
      const metricsUrl = `${hatch.baseUrl}/metrics`;
      const before = await scrape(metricsUrl);
      const user = await userWithToken(hatch);
      const client = await connectClient(hatch, user.accessToken);
      await client.callTool({ name: "whoami", arguments: {} });
      await client.callTool({ name: "whoami", arguments: {} });
      const bad = await client.callTool({ name: "tool_stats", arguments: { address: "no-such-app-here", days: 99 } });
      expect(bad.isError).toBe(true);
      const missingApp = await client.callTool({ name: "tool_stats", arguments: { address: "no-such-app-here" } });
      expect(missingApp.isError).toBe(true);
      await client.close();
      const statuses: number[] = [];
      for (const url of [`${hatch.appHostUrl}/`, hatch.appHostUrl.replace("//", "//no-such-app-here.")]) {
        const response = await fetch(url, { redirect: "manual" });
        await response.text();
        statuses.push(response.status);
      }
      const after = await scrape(metricsUrl);

      expect(moved(before, after, 'hatch_mcp_tool_calls_total{tool="whoami",outcome="ok"}')).toBe(2);
      expect(moved(before, after, 'hatch_mcp_tool_calls_total{tool="tool_stats",outcome="invalid_input"}')).toBe(1);
      expect(moved(before, after, 'hatch_mcp_tool_calls_total{tool="tool_stats",outcome="not_found"}')).toBe(1);
      // The invalid call never left the gateway; the other reached the apps service.
      expect(
        moved(before, after, 'hatch_service_tool_calls_total{service="apps",tool="tool_stats",outcome="not_found"}'),
      ).toBe(1);
      expect(
        moved(
          before,
          after,
          'hatch_service_tool_calls_total{service="apps",tool="tool_stats",outcome="invalid_input"}',
        ),
      ).toBe(0);
      expect(moved(before, after, 'hatch_mcp_tool_call_duration_seconds_count{tool="whoami"}')).toBe(2);
      expect(moved(before, after, 'hatch_service_tool_calls_total{service="orgs",tool="whoami",outcome="ok"}')).toBe(2);
      expect(moved(before, after, 'hatch_service_tool_call_duration_seconds_count{service="orgs",tool="whoami"}')).toBe(
        2,
      );
      for (const cls of new Set(statuses.map((s) => `${Math.floor(s / 100)}xx`))) {
        const expected = statuses.filter((s) => `${Math.floor(s / 100)}xx` === cls).length;
        expect(moved(before, after, `hatch_app_host_requests_total{status="${cls}"}`)).toBe(expected);
      }
      // Every service with an outbox reports its lag (nothing waits once a call has answered).
      for (const service of ["orgs", "apps", "billing"]) {
        expect(after.get(`hatch_outbox_pending_events{service="${service}"}`)).toBe(0);
        expect(after.has(`hatch_outbox_oldest_pending_seconds{service="${service}"}`)).toBe(true);
      }
    }, 30_000);

    test("without the token /metrics answers 401 and shows nothing", async () => {
      for (const headers of [
        {},
        { Authorization: "Bearer wrong-token-of-some-length" },
        { Authorization: METRICS_TOKEN },
      ] as Record<string, string>[]) {
        const response = await fetch(`${hatch.baseUrl}/metrics`, { headers });
        expect(response.status).toBe(401);
        expect(response.headers.get("www-authenticate")).toContain("Bearer");
        const text = await response.text();
        expect(text).not.toContain("hatch_");
        expect(text).toContain("METRICS_TOKEN");
      }
    });
  });
}

describe("/metrics when no token is set", () => {
  test("a deployed gateway answers 404 and says how to turn metrics on; bun run dev (devPages) serves them", async () => {
    const deployed = await startTestHatch("embedded", { services: ["orgs"] });
    const dev = await startTestHatch("embedded", { services: ["orgs"], gatewayConfig: { devPages: true } });
    try {
      const off = await fetch(`${deployed.baseUrl}/metrics`);
      expect(off.status).toBe(404);
      expect(await off.text()).toContain("set METRICS_TOKEN");
      const on = await fetch(`${dev.baseUrl}/metrics`);
      expect(on.status).toBe(200);
      expect(await on.text()).toContain("hatch_mcp_tool_calls_total");
    } finally {
      await deployed.stop();
      await dev.stop();
    }
  }, 60_000);
});

describe("metrics outside the gateway", () => {
  let listener: MetricsListener;
  beforeAll(() => {
    listener = serveMetrics({ port: 0, token: METRICS_TOKEN });
  });
  afterAll(async () => {
    await listener.stop();
  });

  test("a service's METRICS_PORT listener serves /metrics to the token only, and nothing else", async () => {
    const url = `http://127.0.0.1:${listener.port}`;
    expect((await fetch(`${url}/metrics`)).status).toBe(401);
    expect((await fetch(`${url}/other`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } })).status).toBe(404);
    const figures = await scrape(`${url}/metrics`);
    expect(figures.has("hatch_process_resident_memory_bytes")).toBe(true);
  });

  test("a bus request nobody answers in time counts as a timeout of its target", async () => {
    const before = await scrape(`http://127.0.0.1:${listener.port}/metrics`);
    const bus = createMemoryBus();
    bus.subscribe("rpc.silent.ask", () => new Promise<void>(() => {}));
    await expect(requestTraced(bus, "rpc.silent.ask", "{}", { timeoutMs: 20 })).rejects.toMatchObject({
      code: "timeout",
    });
    // No answerer at all is not a timeout.
    await expect(requestTraced(bus, "rpc.nobody.ask", "{}", { timeoutMs: 20 })).rejects.toMatchObject({
      code: "no_responders",
    });
    const after = await scrape(`http://127.0.0.1:${listener.port}/metrics`);
    expect(moved(before, after, 'hatch_bus_request_timeouts_total{target="rpc.silent"}')).toBe(1);
    expect(after.has('hatch_bus_request_timeouts_total{target="rpc.nobody"}')).toBe(false);
  });
});
