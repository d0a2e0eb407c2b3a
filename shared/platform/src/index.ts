export { withDeadline, withDeadlineOr } from "./deadline.ts";
export { BusError, decodeJson, encodeJson, subjectMatches, toBytes, withPrefix, withoutPrefix } from "./bus/types.ts";
export type {
  Bus,
  BusErrorCode,
  BusHandler,
  BusMessage,
  BusReply,
  BusSubscription,
  PublishOptions,
  RequestOptions,
  SubscribeOptions,
} from "./bus/types.ts";
export { createMemoryBus } from "./bus/memory.ts";
export { requestTraced } from "./bus/traced.ts";
export type { TracedRequestOptions } from "./bus/traced.ts";
export {
  busTarget,
  metrics,
  metricsRegistry,
  metricsResponse,
  serveMetrics,
  statusClass,
  watchOutbox,
} from "./telemetry/metrics.ts";
export type { MetricsListener, OutboxLag } from "./telemetry/metrics.ts";
export {
  activeTraceparent,
  inSpan,
  SpanKind,
  startTracing,
  tracesEndpoint,
  tracingEnabled,
} from "./telemetry/tracing.ts";
export type { SpanHandle, SpanOptions, Tracing, TracingOptions } from "./telemetry/tracing.ts";
export { checkReadiness, probeResponse, type Readiness } from "./readiness.ts";
export { busReachable, createNatsBus, isNatsBus, natsServers, wrapNatsConnection } from "./bus/nats.ts";
export { ensureReplicas, openKvBucket } from "./bus/jetstream-replicas.ts";
export type { NatsBus, NatsBusOptions } from "./bus/nats.ts";
export { LazyKv } from "./bus/lazy-kv.ts";
export { addressKey, clientAddressOf } from "./address-key.ts";
export { confirmUsesTable, consumeConfirm } from "./confirm-store.ts";
export type { ConfirmUsesTable } from "./confirm-store.ts";
export { eventStreamFor } from "./events/index.ts";
export { createJetStreamEventStream, deleteEventsStream, eventsStreamName } from "./events/jetstream-stream.ts";
export { createMemoryEventStream } from "./events/memory-stream.ts";
export { createOutboxRelay, outboxTable, writeEvent } from "./events/outbox.ts";
export { createBatchLoop } from "./jobs/batch-loop.ts";
export type { BatchLoop, BatchLoopOptions } from "./jobs/batch-loop.ts";
export { cancelJob, enqueueJob, JobQueue, jobsTable } from "./jobs/queue.ts";
export type { JobKind, JobOutcome, JobQueueOptions, JobRow, JobsTable, NewJob } from "./jobs/queue.ts";
export type { OutboxRelay, OutboxRelayOptions, OutboxTable } from "./events/outbox.ts";
export type { ConsumeOptions, EventConsumer, EventStream } from "./events/stream.ts";
export { checkLimit, EntitlementsCache } from "./billing/entitlements.ts";
export { checkLimitLocked, lockLimit } from "./billing/limit-lock.ts";
export type { LockedLimit } from "./billing/limit-lock.ts";
export { createRateCounter, deleteRateBucket, KvRateCounter, MemoryRateCounter } from "./rate/counter.ts";
export type { RateCounter, RateDecision, RateWindows } from "./rate/counter.ts";
export { LeasedRateCounter, leaseHotKeys } from "./rate/leased.ts";
export { isSpecialPurposeAddress, parseIPv4, parseIPv6 } from "./ip-ranges.ts";
export { createLogger, LOG_LEVELS } from "./logger.ts";
export type { LogLevel, Logger, LoggerOptions } from "./logger.ts";
export {
  AppsHostEnvSchema,
  appsHostOf,
  CommonEnvSchema,
  ConfigError,
  databaseSettingsFrom,
  loadConfig,
} from "./config.ts";
export type { CommonEnv } from "./config.ts";
export { DEFAULT_POOL_SIZE, openEmbeddedPostgres, openServiceDatabase } from "./db.ts";
export type { Database, DatabaseHandle, DatabaseSource, OpenDatabaseOptions, PostgresPoolSettings } from "./db.ts";
export { callRpc, unavailable } from "./rpc.ts";
export type { RpcCallOptions } from "./rpc.ts";
export { bindRpc, bindTool, startService } from "./service.ts";
export type {
  RpcBinding,
  RpcCall,
  RunningService,
  ServiceOptions,
  ToolBinding,
  ToolCall,
  ToolHandler,
  ToolOutcome,
} from "./service.ts";
export { runServiceMain } from "./main.ts";
export { DEFAULT_SHUTDOWN_TIMEOUT_MS, EXIT_CODES, onShutdown, parentPidFrom } from "./shutdown.ts";
export type { Shutdown, ShutdownOptions, ShutdownStep } from "./shutdown.ts";
export type { ServiceDeps, ServiceMainOptions } from "./main.ts";
export { databaseUnavailableMessage, isDatabaseUnavailable } from "./db-errors.ts";
