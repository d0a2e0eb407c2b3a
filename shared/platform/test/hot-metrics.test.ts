import { describe, expect, test } from "bun:test";
import { Counter, Histogram, Registry } from "prom-client";
import { HotCounter, HotHistogram } from "../src/telemetry/metrics.ts";

// The app host's request metrics are kept in plain numbers (HotCounter, HotHistogram): /metrics must read exactly as
// prom-client's own Counter and Histogram would for the same requests.
describe("hot-path metrics", () => {
  const buckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
  const durations = [0.0001, 0.004, 0.005, 0.02, 0.3, 7, 31, 0.0002];
  const statuses = ["2xx", "2xx", "3xx", "4xx", "2xx", "5xx"];

  test("print the same text as prom-client's Counter and Histogram", async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const counter = new HotCounter("x_requests_total", "Requests by class.", "status", ours);
    const histogram = new HotHistogram("x_seconds", "Time to answer.", buckets, ours);
    const promCounter = new Counter({
      name: "x_requests_total",
      help: "Requests by class.",
      labelNames: ["status"],
      registers: [theirs],
    });
    const promHistogram = new Histogram({ name: "x_seconds", help: "Time to answer.", buckets, registers: [theirs] });
    // Before any request, then after some.
    expect(await ours.metrics()).toBe(await theirs.metrics());
    for (const status of statuses) {
      counter.inc(status);
      promCounter.inc({ status });
    }
    for (const seconds of durations) {
      histogram.observe(seconds);
      promHistogram.observe(seconds);
    }
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    expect(text).toContain('x_requests_total{status="2xx"} 3');
    expect(text).toContain('x_seconds_bucket{le="0.005"} 4');
    expect(text).toContain('x_seconds_bucket{le="+Inf"} 8');
    expect(text).toContain("x_seconds_count 8");
    // A registry reset empties both the same way.
    ours.resetMetrics();
    theirs.resetMetrics();
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });
});
