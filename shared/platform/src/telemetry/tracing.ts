import {
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Span,
} from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import { PgPreparedQuery } from "drizzle-orm/pg-core";
import { childTraceparent } from "@hatch/contracts";
import type { Logger } from "../logger.ts";

// OpenTelemetry traces: the MCP request, the tool call, each bus request (client) and its handler (server), and the
// SQL the handler runs. The W3C `traceparent` header already travels on every bus message; with tracing on, it
// carries the id of a real span. With no exporter configured nothing is registered and these helpers only pass the
// trace id on (childTraceparent), as before: no SDK work per call.

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const TRACER = "hatch";

export { SpanKind };

export interface TracingOptions {
  /** `service.name` of the resource: one per process (`hatch` for `bun run dev`, `hatch-orgs` for a service alone). */
  serviceName: string;
  version?: string;
  /** Reads OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_EXPORTER_OTLP_ENDPOINT (+ `/v1/traces`). */
  env: Record<string, string | undefined>;
  logger?: Logger;
}

export interface Tracing {
  readonly enabled: boolean;
  /** Where spans go (OTLP over HTTP, JSON), or null when tracing is off. */
  readonly endpoint: string | null;
  /** Sends what is buffered now. */
  flush(): Promise<void>;
  /** Flushes, then unregisters the provider, so the helpers go back to passing trace ids only. */
  shutdown(): Promise<void>;
}

let provider: TracerProvider | null = null;

/** The OTLP traces URL the environment asks for, or null. */
export function tracesEndpoint(env: Record<string, string | undefined>): string | null {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return base ? `${base.replace(/\/+$/, "")}/v1/traces` : null;
}

/** Registers the process's tracer provider when an OTLP endpoint is configured; one per process. */
export function startTracing(options: TracingOptions): Tracing {
  const endpoint = tracesEndpoint(options.env);
  if (!endpoint) return { enabled: false, endpoint: null, flush: async () => {}, shutdown: async () => {} };
  if (provider) throw new Error("tracing is already started in this process");
  const mine = new TracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: options.serviceName,
      [ATTR_SERVICE_VERSION]: options.version ?? "0.1.0",
    }),
    // The JSON encoding of OTLP over HTTP (this exporter's), so a collector or a test can read it without protobuf.
    spanProcessors: [
      new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: endpoint }), scheduledDelayMillis: 1_000 }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(mine);
  provider = mine;
  traceSqlQueries();
  options.logger?.info("tracing on", { endpoint });
  return {
    enabled: true,
    endpoint,
    flush: () => mine.forceFlush(),
    async shutdown() {
      if (provider !== mine) return;
      await mine.shutdown().catch((error: unknown) => options.logger?.warn("flushing traces failed", { error }));
      trace.disable();
      context.disable();
      provider = null;
    },
  };
}

export function tracingEnabled(): boolean {
  return provider !== null;
}

export interface SpanOptions {
  kind?: SpanKind;
  /** The caller's traceparent (from a header); absent: the active span in this async context, if any. */
  parent?: string | null;
  attributes?: Attributes;
}

/**
 * Runs `fn` in a span (active for anything it awaits, so its SQL nests under it) and ends it after. `fn` gets the
 * traceparent to send onwards: this span's with tracing on, a fresh child id of the same trace with it off.
 */
export async function inSpan<T>(
  name: string,
  options: SpanOptions,
  fn: (span: SpanHandle, traceparent: string) => Promise<T>,
): Promise<T> {
  if (!provider) return fn(NO_SPAN, childTraceparent(options.parent ?? activeTraceparent()));
  const parentContext = options.parent ? contextOf(options.parent) : context.active();
  const span = trace
    .getTracer(TRACER)
    .startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes }, parentContext);
  const handle = spanHandle(span);
  try {
    return await context.with(trace.setSpan(parentContext, span), () => fn(handle, traceparentOf(span)));
  } catch (error) {
    // The error's name only: messages can carry values (SQL parameters, input).
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.name : "error" });
    throw error;
  } finally {
    span.end();
  }
}

/** What a caller may do with its span: attributes and a failed status, never an exception's message. */
export interface SpanHandle {
  set(key: string, value: string | number | boolean): void;
  fail(reason: string): void;
}

const NO_SPAN: SpanHandle = { set: () => {}, fail: () => {} };

function spanHandle(span: Span): SpanHandle {
  return {
    set: (key, value) => void span.setAttribute(key, value),
    fail: (reason) => void span.setStatus({ code: SpanStatusCode.ERROR, message: reason }),
  };
}

/** The traceparent of the span active in this async context (tracing on), if any. */
export function activeTraceparent(): string | undefined {
  const span = trace.getSpan(context.active());
  return span ? traceparentOf(span) : undefined;
}

function traceparentOf(span: Span): string {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-0${(traceFlags & TraceFlags.SAMPLED).toString(16)}`;
}

function contextOf(traceparent: string) {
  const match = TRACEPARENT.exec(traceparent);
  if (!match || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: Number.parseInt(match[3]!, 16),
    isRemote: true,
  });
}

type QueryWithCache = (queryString: string, params: unknown[], query: () => Promise<unknown>) => Promise<unknown>;
let sqlTraced = false;

/**
 * SQL spans: every drizzle query (postgres.js and PGlite alike) runs through PgPreparedQuery's queryWithCache, so one
 * wrapper there gives a client span per query with `db.query.text` (drizzle's statement has `$1` placeholders, never
 * the values). Only inside a traced call: a background poll outside any span makes no root spans.
 */
function traceSqlQueries(): void {
  if (sqlTraced) return;
  sqlTraced = true;
  const proto = PgPreparedQuery.prototype as unknown as { queryWithCache: QueryWithCache };
  const original = proto.queryWithCache;
  proto.queryWithCache = function (this: unknown, queryString, params, query) {
    if (!provider || !trace.getSpan(context.active())) return original.call(this, queryString, params, query);
    const operation = /^\s*(\w+)/.exec(queryString)?.[1]?.toUpperCase() ?? "SQL";
    return inSpan(
      operation,
      {
        kind: SpanKind.CLIENT,
        attributes: { "db.system.name": "postgresql", "db.operation.name": operation, "db.query.text": queryString },
      },
      () => original.call(this, queryString, params, query),
    );
  };
}
