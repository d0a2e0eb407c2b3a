import { ConfigError, createLogger, createNatsBus, loadConfig, openServiceDatabase, CommonEnvSchema } from "@hatch/shared";
import { createGateway, GATEWAY_MIGRATIONS } from "./app.ts";
import { loadGatewayConfig } from "./config.ts";

// `bun run start` of the gateway alone: real NATS and Postgres from the environment.
let config;
let env;
try {
  env = loadConfig(CommonEnvSchema, process.env);
  config = loadGatewayConfig(process.env);
  if (!env.NATS_URL || !env.DATABASE_URL) throw new ConfigError("Invalid configuration:\n  NATS_URL and DATABASE_URL are required when the gateway runs on its own");
} catch (error) {
  process.stderr.write(`gateway: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
}
const logger = createLogger({ level: env.LOG_LEVEL, fields: { service: "gateway" } });
const bus = await createNatsBus({ url: env.NATS_URL!, prefix: env.BUS_PREFIX, name: "hatch-gateway", logger, user: env.NATS_USER, pass: env.NATS_PASSWORD });
const database = await openServiceDatabase({ kind: "postgres", url: env.DATABASE_URL!, maxConnections: 20 }, { schema: "gateway", migrationsFolder: GATEWAY_MIGRATIONS });
const gateway = createGateway({ config, bus, db: database.db, logger });
const server = gateway.app.listen({ port: config.port, hostname: process.env.HOST ?? "0.0.0.0", reusePort: false, maxRequestBodySize: config.maxBodyBytes * 2 });
logger.info("gateway ready", { url: config.baseUrl, mcp: config.mcpUrl, port: server.server?.port });

const stop = async () => {
  await server.stop();
  await gateway.close();
  await bus.drain();
  await database.close();
  process.exit(0);
};
process.once("SIGINT", () => void stop());
process.once("SIGTERM", () => void stop());
