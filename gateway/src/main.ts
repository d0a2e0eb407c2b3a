import {
  CommonEnvSchema,
  ConfigError,
  createLogger,
  createNatsBus,
  databaseSettingsFrom,
  loadConfig,
  onShutdown,
  openServiceDatabase,
  parentPidFrom,
  startTracing,
} from "@hatch/platform";
import { z } from "zod";
import { createGateway, GATEWAY_MIGRATIONS } from "./app.ts";
import { loadGatewayConfig } from "./config.ts";

const MainEnvSchema = CommonEnvSchema.extend({
  /**
   * After SIGTERM the gateway answers /readyz with 503 and keeps serving this long before it stops listening, so load
   * balancers that poll /readyz take it out first (a few seconds over their probe period; at most half of
   * SHUTDOWN_TIMEOUT_MS is used). 0 (default): it stops listening at once.
   */
  DRAIN_DELAY_MS: z.coerce
    .number({ error: "must be a number of milliseconds, for example 5000" })
    .int("must be a whole number of milliseconds")
    .min(0, "must be 0 or more")
    .max(300_000, "must be at most 300000 (5 minutes)")
    .default(0),
});

// `bun run start` of the gateway alone: real NATS and Postgres from the environment.
const GATEWAY_POOL_SIZE = 20;
let config;
let env;
try {
  env = loadConfig(MainEnvSchema, process.env);
  config = loadGatewayConfig(process.env);
  if (!env.NATS_URL || !env.DATABASE_URL)
    throw new ConfigError(
      "Invalid configuration:\n  NATS_URL and DATABASE_URL are required when the gateway runs on its own",
    );
} catch (error) {
  process.stderr.write(`gateway: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
}
const logger = createLogger({ level: env.LOG_LEVEL, fields: { service: "gateway" } });
const tracing = startTracing({ serviceName: "hatch-gateway", env: process.env, logger });
const bus = await createNatsBus({
  url: env.NATS_URL!,
  prefix: env.BUS_PREFIX,
  name: "hatch-gateway",
  logger,
  user: env.NATS_USER,
  pass: env.NATS_PASSWORD,
  replicas: env.NATS_REPLICAS,
  waitForServer: true,
});
const database = await openServiceDatabase(
  // DB_POOL_SIZE, default 20: the gateway answers every request, so it keeps more connections than a service.
  { kind: "postgres", url: env.DATABASE_URL!, ...databaseSettingsFrom(env, GATEWAY_POOL_SIZE) },
  { schema: "gateway", migrationsFolder: GATEWAY_MIGRATIONS, waitWhileBusy: logger, logger },
);
const gateway = createGateway({ config, bus, db: database.db, logger });
const listener = gateway.listen({ port: config.port, hostname: process.env.HOST ?? "0.0.0.0" });
// Bounded: stop listening and end the MCP event streams, let calls in flight finish, then sessions, bus and database.
let inFlight: Promise<void> | undefined;
onShutdown({
  logger,
  timeoutMs: env.SHUTDOWN_TIMEOUT_MS,
  parentPid: parentPidFrom(process.env),
  steps: [
    {
      name: "answer /readyz with 503, still serving",
      share: env.DRAIN_DELAY_MS > 0 ? Math.min(0.5, (env.DRAIN_DELAY_MS + 100) / env.SHUTDOWN_TIMEOUT_MS) : undefined,
      run: async () => {
        gateway.beginDrain();
        if (env.DRAIN_DELAY_MS > 0) await Bun.sleep(env.DRAIN_DELAY_MS);
      },
    },
    {
      name: "stop taking requests",
      run: () => {
        inFlight = listener?.stop(false);
        gateway.mcp.beginClose();
      },
    },
    { name: "finish requests in flight", share: 0.4, run: () => inFlight },
    { name: "close connections left", share: 0.05, run: () => listener?.stop(true) },
    { name: "close MCP sessions", share: 0.1, run: () => gateway.close() },
    { name: "drain the bus", share: 0.2, run: () => bus.drain() },
    { name: "close the database", share: 0.2, run: () => database.close() },
    { name: "send the last traces", run: () => tracing.shutdown() },
  ],
});
logger.info("gateway ready", { url: config.baseUrl, mcp: config.mcpUrl, port: listener.port });
