import { z } from "zod";
import { createNatsBus } from "./bus/nats.ts";
import type { Bus } from "./bus/types.ts";
import { CommonEnvSchema, ConfigError, databaseSettingsFrom, loadConfig } from "./config.ts";
import { deriveKey, type ServiceName } from "@hatch/contracts";
import { DEFAULT_POOL_SIZE, openServiceDatabase, type Database, type DatabaseHandle } from "./db.ts";
import { createLogger, type Logger } from "./logger.ts";
import type { RunningService } from "./service.ts";
import { checkReadiness } from "./readiness.ts";
import { onShutdown, parentPidFrom } from "./shutdown.ts";
import { serveMetrics, type MetricsListener } from "./telemetry/metrics.ts";
import { startTracing } from "./telemetry/tracing.ts";

/** What every service's `start` receives, in both the embedded and the distributed deployment. */
export interface ServiceDeps {
  bus: Bus;
  db: Database;
  contextKey: Buffer;
  /** The deployment secret; a service derives its own purpose keys from it (confirm tokens, viewer tickets). */
  secret: string;
  /** The variables a service reads its own settings from: process.env when deployed, a fixed map in tests. */
  env: Record<string, string | undefined>;
  logger: Logger;
}

const StandaloneEnvSchema = CommonEnvSchema.extend({
  NATS_URL: CommonEnvSchema.shape.NATS_URL.unwrap(),
  DATABASE_URL: CommonEnvSchema.shape.DATABASE_URL.unwrap(),
  HATCH_SECRET: CommonEnvSchema.shape.HATCH_SECRET.unwrap(),
});

export interface ServiceMainOptions {
  name: ServiceName;
  migrationsFolder: string;
  start: (deps: ServiceDeps) => Promise<RunningService>;
}

/** `bun run start` of one service: real NATS and Postgres from the environment, clean shutdown on signals. */
export async function runServiceMain(options: ServiceMainOptions): Promise<void> {
  let env: z.infer<typeof StandaloneEnvSchema>;
  try {
    env = loadConfig(StandaloneEnvSchema, process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(
      `${options.name}: ${error.message}\nA service started alone needs NATS_URL, DATABASE_URL and HATCH_SECRET.\n`,
    );
    process.exit(2);
  }
  const logger = createLogger({ level: env.LOG_LEVEL, fields: { service: options.name } });
  let bus: Bus | undefined;
  let database: DatabaseHandle | undefined;
  let running: RunningService | undefined;
  let metricsListener: MetricsListener | undefined;
  /** From the signal on, /readyz says no (the service drains its calls). */
  let draining = false;
  const tracing = startTracing({ serviceName: `hatch-${options.name}`, env: process.env, logger });
  // Installed before anything opens, so a signal at any time (even while starting, even right after "service ready")
  // gets the same bounded stop: the service stops taking calls (unsubscribes) and flushes its outbox, stats and logs;
  // the bus drain lets calls in flight answer; each step within its share of the deadline, so a dead NATS or Postgres
  // cannot hold it.
  onShutdown({
    logger,
    timeoutMs: env.SHUTDOWN_TIMEOUT_MS,
    parentPid: parentPidFrom(process.env),
    steps: [
      {
        name: "stop the service (outbox, stats, logs)",
        share: 0.5,
        run: () => {
          draining = true;
          return running?.stop();
        },
      },
      { name: "drain the bus", share: 0.2, run: () => bus?.drain() },
      { name: "close the database", share: 0.2, run: () => database?.close() },
      {
        name: "stop metrics, send the last traces",
        run: async () => void (await Promise.all([metricsListener?.stop(), tracing.shutdown()])),
      },
    ],
  });
  if (env.METRICS_PORT !== undefined)
    metricsListener = serveMetrics({
      port: env.METRICS_PORT,
      hostname: env.METRICS_HOST,
      token: env.METRICS_TOKEN,
      logger,
      // Not ready until the bus and the database are open and the service has started.
      readiness: async () =>
        bus && database && running
          ? checkReadiness(bus, database.db, draining)
          : { ready: false, draining, bus: bus !== undefined, database: database !== undefined },
    });
  bus = await createNatsBus({
    url: env.NATS_URL,
    prefix: env.BUS_PREFIX,
    name: `hatch-${options.name}`,
    logger,
    user: env.NATS_USER,
    pass: env.NATS_PASSWORD,
    replicas: env.NATS_REPLICAS,
    waitForServer: true,
  });
  database = await openServiceDatabase(
    { kind: "postgres", url: env.DATABASE_URL, ...databaseSettingsFrom(env, DEFAULT_POOL_SIZE) },
    // Postgres with no free connection (or starting up) is waited for, with a log line each try, not a crash.
    { schema: options.name, migrationsFolder: options.migrationsFolder, waitWhileBusy: logger, logger },
  );
  try {
    running = await options.start({
      bus,
      db: database.db,
      contextKey: deriveKey(env.HATCH_SECRET, "ctx"),
      secret: env.HATCH_SECRET,
      env: process.env,
      logger,
    });
  } catch (error) {
    // The service's own settings (read at start, some checked against the database) are told plainly, not as a stack.
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${options.name}: ${error.message}\n`);
    process.exit(2);
  }
}
