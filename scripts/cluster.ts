// `bun run cluster`: the gateway and the four services as five processes against real NATS and Postgres.
import { CommonEnvSchema, ConfigError, createLogger, loadConfig, onShutdown } from "@hatch/platform";
import { randomBytes } from "node:crypto";
import { startCluster } from "./cluster-lib.ts";

let env;
try {
  env = loadConfig(CommonEnvSchema, process.env);
  if (!env.NATS_URL || !env.DATABASE_URL)
    throw new ConfigError(
      "Invalid configuration:\n  NATS_URL and DATABASE_URL are required (for example nats://127.0.0.1:4222 and postgres://postgres@127.0.0.1:5432/hatch)",
    );
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
}
const secret = env.HATCH_SECRET ?? randomBytes(32).toString("hex");
if (!env.HATCH_SECRET)
  process.stderr.write("HATCH_SECRET not set: using a random one for this run (tokens end with it).\n");
const cluster = await startCluster({
  natsUrl: env.NATS_URL!,
  databaseUrl: env.DATABASE_URL!,
  secret,
  busPrefix: env.BUS_PREFIX,
  port: Number(process.env.PORT ?? 3000),
  shutdownTimeoutMs: env.SHUTDOWN_TIMEOUT_MS,
});
// The children stop themselves within SHUTDOWN_TIMEOUT_MS; this launcher waits that long plus a margin, then kills
// what is left. A second signal, or this launcher's own deadline, kills every child at once.
const logger = createLogger({ level: env.LOG_LEVEL, fields: { service: "cluster" } });
onShutdown({
  logger,
  timeoutMs: env.SHUTDOWN_TIMEOUT_MS + 5_000,
  steps: [{ name: "stop every child process", run: () => cluster.stop() }],
  onForce: () => cluster.kill(),
});
process.stdout.write(
  `\nHatch cluster is running: ${cluster.baseUrl}/mcp (gateway + orgs, apps, domains, billing as separate processes)\n\n`,
);
