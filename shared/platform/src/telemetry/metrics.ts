import { timingSafeEqual } from "node:crypto";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Logger } from "../logger.ts";
import { probeResponse, type Readiness } from "../readiness.ts";

// Prometheus metrics of this process, on one registry: the gateway serves it at /metrics, a service started alone on
// METRICS_PORT. In `bun run dev` every service runs in the gateway's process, so its /metrics covers them all.
// prom-client's default Node metrics are left out: under Bun its event-loop figures are meaningless (NaN, 9e9).

export const metricsRegistry = new Registry();

type RegisteredMetric = Parameters<Registry["registerMetric"]>[0];
type MetricValues = { labels: Record<string, string | number>; value: number; metricName?: string }[];

/**
 * A counter by one label for a path every request takes: `inc` adds to a map entry, where prom-client's Counter checks
 * and hashes its labels on each call. The registry reads it like prom-client's own counters (the same text).
 */
export class HotCounter {
  readonly type = "counter";
  readonly aggregator = "sum";
  private readonly counts = new Map<string, number>();

  constructor(
    public name: string,
    readonly help: string,
    private readonly label: string,
    registry: Registry = metricsRegistry,
  ) {
    registry.registerMetric(this as unknown as RegisteredMetric);
  }

  inc(labelValue: string): void {
    this.counts.set(labelValue, (this.counts.get(labelValue) ?? 0) + 1);
  }

  async get(): Promise<{ name: string; help: string; type: string; values: MetricValues; aggregator: string }> {
    const values: MetricValues = [...this.counts].map(([key, value]) => ({ labels: { [this.label]: key }, value }));
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.counts.clear();
  }
}

/**
 * A histogram without labels for a path every request takes: `observe` is a search of a dozen bounds and two adds,
 * where prom-client's Histogram checks and hashes labels on each call. Read like prom-client's own (the same text).
 */
export class HotHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";
  private readonly counts: Float64Array;
  private sum = 0;
  private count = 0;
  /** As prom-client's: zeros from the start, nothing after a reset until the next observation. */
  private shown = true;

  constructor(
    public name: string,
    readonly help: string,
    private readonly buckets: readonly number[],
    registry: Registry = metricsRegistry,
  ) {
    this.counts = new Float64Array(buckets.length);
    registry.registerMetric(this as unknown as RegisteredMetric);
  }

  observe(value: number): void {
    const bounds = this.buckets;
    for (let i = 0; i < bounds.length; i++)
      if (value <= bounds[i]!) {
        this.counts[i]!++;
        break;
      }
    this.sum += value;
    this.count++;
    this.shown = true;
  }

  async get(): Promise<{ name: string; help: string; type: string; values: MetricValues; aggregator: string }> {
    const bucket = `${this.name}_bucket`;
    const values: MetricValues = [];
    if (!this.shown) return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
    let below = 0;
    for (let i = 0; i < this.buckets.length; i++) {
      below += this.counts[i]!;
      values.push({ labels: { le: this.buckets[i]! }, value: below, metricName: bucket });
    }
    values.push({ labels: { le: "+Inf" }, value: this.count, metricName: bucket });
    values.push({ labels: {}, value: this.sum, metricName: `${this.name}_sum` });
    values.push({ labels: {}, value: this.count, metricName: `${this.name}_count` });
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
    this.shown = false;
  }
}

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export const metrics = {
  /** Every tools/call the gateway answered, by tool and outcome (ok, needs_user, an error code, declined). */
  mcpToolCalls: new Counter({
    name: "hatch_mcp_tool_calls_total",
    help: "MCP tool calls answered by the gateway, by tool and outcome (ok, needs_user, the error code, or error for a declined question).",
    labelNames: ["tool", "outcome"] as const,
    registers: [metricsRegistry],
  }),
  mcpToolCallSeconds: new Histogram({
    name: "hatch_mcp_tool_call_duration_seconds",
    help: "Time from tools/call to its answer at the gateway, including the service and any question to the user.",
    labelNames: ["tool"] as const,
    buckets: SECONDS,
    registers: [metricsRegistry],
  }),
  serviceToolCalls: new Counter({
    name: "hatch_service_tool_calls_total",
    help: "Tool calls handled by a service, by service, tool and outcome (ok, ask or the error code).",
    labelNames: ["service", "tool", "outcome"] as const,
    registers: [metricsRegistry],
  }),
  serviceToolCallSeconds: new Histogram({
    name: "hatch_service_tool_call_duration_seconds",
    help: "Time a service took to handle a tool call, including its outbox flush.",
    labelNames: ["service", "tool"] as const,
    buckets: SECONDS,
    registers: [metricsRegistry],
  }),
  busTimeouts: new Counter({
    name: "hatch_bus_request_timeouts_total",
    help: "Bus requests that got no answer in time, by target (tools.<service> or rpc.<service>).",
    labelNames: ["target"] as const,
    registers: [metricsRegistry],
  }),
  // The app host counts every request it answers (a page's every file): plain additions, read when /metrics is.
  appHostRequests: new HotCounter(
    "hatch_app_host_requests_total",
    "Requests answered by the app host, by status class (2xx, 3xx, 4xx, 5xx).",
    "status",
  ),
  documentUsageShares: new HotCounter(
    "hatch_app_document_usage_locks_total",
    "App data adds that found no shard of the app's document count free with room and took the app's usage lock, by outcome: room (a shard had room by then), shared (the app's room was shared out again), full, gone.",
    "outcome",
  ),
  storageEscrowLocks: new HotCounter(
    "hatch_app_storage_escrow_locks_total",
    "App data adds on a plan with a storage limit that got nothing from the account's storage escrow and took its lock, by outcome: room (a shard had room by then), counted (counted under the lock, the room shared out again).",
    "outcome",
  ),
  appHostSeconds: new HotHistogram(
    "hatch_app_host_request_duration_seconds",
    "Time the app host took to answer a request (to its response headers).",
    SECONDS,
  ),
};

/** `tools.orgs.whoami` → `tools.orgs`: a label with as many values as there are services. */
export function busTarget(subject: string): string {
  return subject.split(".").slice(0, 2).join(".");
}

const STATUS_CLASSES = ["0xx", "1xx", "2xx", "3xx", "4xx", "5xx"];

export function statusClass(status: number): string {
  return STATUS_CLASSES[Math.floor(status / 100)] ?? `${Math.floor(status / 100)}xx`;
}

export interface OutboxLag {
  pending: number;
  oldestSeconds: number;
}

const outboxSources = new Map<symbol, { service: string; lag: () => Promise<OutboxLag> }>();

new Gauge({
  name: "hatch_outbox_pending_events",
  help: "Events written to a service's outbox and not yet on the stream.",
  labelNames: ["service"] as const,
  registers: [metricsRegistry],
  async collect() {
    this.reset();
    for (const [service, lag] of await readOutboxes()) this.set({ service }, lag.pending);
  },
});
new Gauge({
  name: "hatch_outbox_oldest_pending_seconds",
  help: "Age of the oldest event still waiting in a service's outbox (0 when none waits).",
  labelNames: ["service"] as const,
  registers: [metricsRegistry],
  async collect() {
    this.reset();
    for (const [service, lag] of await readOutboxes()) this.set({ service }, lag.oldestSeconds);
  },
});
new Gauge({
  name: "hatch_process_resident_memory_bytes",
  help: "Resident memory of this process.",
  registers: [metricsRegistry],
  collect() {
    this.set(process.memoryUsage().rss);
  },
});

// Both outbox gauges are collected in one scrape: read the tables once for the two.
let reading: Promise<Array<[string, OutboxLag]>> | null = null;
function readOutboxes(): Promise<Array<[string, OutboxLag]>> {
  reading ??= Promise.all(
    [...outboxSources.values()].map(
      async ({ service, lag }) =>
        [service, await lag().catch(() => ({ pending: Number.NaN, oldestSeconds: Number.NaN }))] as [string, OutboxLag],
    ),
  ).finally(() => queueMicrotask(() => (reading = null)));
  return reading;
}

/** Reports a service's outbox lag at each scrape; returns the function that stops it (the service's stop). */
export function watchOutbox(service: string, lag: () => Promise<OutboxLag>): () => void {
  const key = Symbol(service);
  outboxSources.set(key, { service, lag });
  return () => void outboxSources.delete(key);
}

/**
 * The /metrics answer. With a token configured, only `Authorization: Bearer <token>` gets the figures (tool names and
 * call counts say what a deployment is used for); without one, whoever can reach the listener can read them.
 */
export async function metricsResponse(request: Request, token: string | undefined, log?: Logger): Promise<Response> {
  if (token && !bearerMatches(request.headers.get("authorization"), token)) {
    return new Response("Send the metrics token as Authorization: Bearer <METRICS_TOKEN>.\n", {
      status: 401,
      headers: { "WWW-Authenticate": 'Bearer realm="metrics"', "Content-Type": "text/plain" },
    });
  }
  try {
    return new Response(await metricsRegistry.metrics(), { headers: { "Content-Type": metricsRegistry.contentType } });
  } catch (error) {
    log?.error("collecting metrics failed", { error });
    return new Response("Collecting metrics failed; see the log.\n", {
      status: 500,
      headers: { "Content-Type": "text/plain" },
    });
  }
}

function bearerMatches(header: string | null, token: string): boolean {
  const given = Buffer.from(/^Bearer (.+)$/i.exec(header ?? "")?.[1] ?? "");
  const wanted = Buffer.from(token);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

export interface MetricsListener {
  readonly port: number;
  stop(): Promise<void>;
}

/**
 * A process without an HTTP server of its own (a service started alone) serves /metrics here, and with `readiness`
 * the probes too: /livez (the process answers) and /readyz (it should get calls: not draining, bus and database up).
 */
export function serveMetrics(options: {
  port: number;
  hostname?: string;
  token?: string;
  logger?: Logger;
  readiness?: () => Promise<Readiness>;
}): MetricsListener {
  const { readiness } = options;
  const server = Bun.serve({
    port: options.port,
    hostname: options.hostname ?? "127.0.0.1",
    fetch: async (request) => {
      const path = new URL(request.url).pathname;
      if (path === "/metrics") return metricsResponse(request, options.token, options.logger);
      const probe = readiness ? await probeResponse(path, readiness) : null;
      return probe ?? new Response("Not found: metrics are at /metrics.\n", { status: 404 });
    },
  });
  options.logger?.info("metrics listening", { port: server.port, path: "/metrics" });
  return { port: server.port ?? options.port, stop: () => server.stop(true) };
}
