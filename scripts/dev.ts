// `bun run dev`: the whole service in one process. With no NATS_URL or DATABASE_URL it needs nothing else:
// the in-process bus and PGlite under DATA_DIR. Set either to use the real server instead.
import { loadGatewayConfig } from "@hatch/gateway";
import {
  CommonEnvSchema,
  ConfigError,
  createLogger,
  databaseSettingsFrom,
  DEFAULT_POOL_SIZE,
  loadConfig,
  onShutdown,
  startTracing,
} from "@hatch/platform";
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { startHatch } from "./hatch.ts";
import { dataDirSecret, lockDataDir } from "./data-dir.ts";
import { serveAdminSocket } from "./admin-socket.ts";

const started = performance.now();
let env;
let config;
let dataDir;
try {
  env = loadConfig(CommonEnvSchema, process.env);
  dataDir = resolve(env.DATA_DIR);
  mkdirSync(dataDir, { recursive: true });
  // Local MCP clients publish their metadata document on http://127.0.0.1: allowed while dev listens on loopback only.
  const loopbackOnly = ["127.0.0.1", "localhost", "::1"].includes(process.env.HOST ?? "127.0.0.1");
  config = loadGatewayConfig(
    { ALLOW_INSECURE_CLIENT_METADATA: loopbackOnly ? "true" : "false", ...process.env },
    env.HATCH_SECRET ?? dataDirSecret(dataDir),
  );
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(2);
}
// The embedded database allows one process at a time: hold the data dir's lock for as long as we run.
const lock = env.DATABASE_URL ? null : lockDataDir(dataDir, "bun run dev");
if (lock && !lock.ok) {
  process.stderr.write(`${dataDir} is in use by ${lock.holder}. Stop it, or set DATA_DIR to another folder.\n`);
  process.exit(1);
}
const releaseLock = () => (lock?.ok ? lock.release() : undefined);

const logger = createLogger({ level: env.LOG_LEVEL });
// One process, one trace resource: the services' spans say which service in `hatch.service`.
const tracing = startTracing({ serviceName: "hatch", env: process.env, logger });
// Every gateway setting read from the environment (TTLs, hosts, limits) reaches the embedded gateway too.
const { secret, mcpUrl: _derived, ...fromEnv } = config;
const hatch = await startHatch({
  secret,
  logger,
  port: config.port,
  baseUrl: config.baseUrl,
  databaseUrl: env.DATABASE_URL,
  databaseSettings: databaseSettingsFrom(env, DEFAULT_POOL_SIZE),
  pgliteDir: join(dataDir, "pg"),
  natsUrl: env.NATS_URL,
  natsReplicas: env.NATS_REPLICAS,
  waitForNats: true,
  busPrefix: env.BUS_PREFIX,
  // The dev outbox page (mail kept when no SMTP server is set) is for this command only, never `bun run start`.
  gatewayConfig: { ...fromEnv, devPages: true },
}).catch((error: unknown) => {
  // The services start first: the app host's port (APP_PORT) or a service setting can stop them.
  const inUse = (error as { code?: string }).code === "EADDRINUSE";
  process.stderr.write(
    inUse
      ? `The app host's port ${process.env.APP_PORT ?? 3001} is already in use. Stop what uses it, or start with APP_PORT=<another port>.\n`
      : error instanceof ConfigError
        ? `${error.message}\n`
        : `Hatch could not start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  releaseLock();
  process.exit(1);
});
let listener: ReturnType<typeof hatch.gateway.listen>;
try {
  listener = hatch.gateway.listen({ port: config.port, hostname: process.env.HOST ?? "127.0.0.1" });
} catch (error) {
  const inUse = (error as { code?: string }).code === "EADDRINUSE";
  process.stderr.write(
    inUse
      ? `Port ${config.port} is already in use. Stop what uses it, or start with PORT=<another port>.\n`
      : `Could not listen: ${String(error)}\n`,
  );
  await hatch.close();
  releaseLock();
  process.exit(1);
}
// `bun run admin` cannot open the embedded database while we hold it: it runs its commands in here instead.
const adminSocket = lock
  ? serveAdminSocket({ dataDir, auth: hatch.gateway.auth, mcpUrl: hatch.config.mcpUrl, logger })
  : null;
// Bounded: stop listening and end the MCP event streams (a client holds its GET stream open for as long as the server
// lets it), let calls in flight finish, then sessions, services, bus and database, each within its share of the deadline.
let inFlight: Promise<void> | undefined;
onShutdown({
  logger,
  timeoutMs: env.SHUTDOWN_TIMEOUT_MS,
  steps: [
    {
      name: "stop taking requests",
      run: () => {
        adminSocket?.stop();
        inFlight = listener?.stop(false);
        hatch.gateway.mcp.beginClose();
      },
    },
    { name: "finish requests in flight", share: 0.4, run: () => inFlight },
    { name: "close connections left", share: 0.05, run: () => listener?.stop(true) },
    ...hatch.closeSteps(),
    { name: "release the data dir", run: releaseLock },
    { name: "send the last traces", run: () => tracing.shutdown() },
  ],
});
const readyMs = Math.round(performance.now() - started);

const mcpUrl = hatch.config.mcpUrl;
const appsOrigin = hatch.services.get("apps")?.urls?.appHost ?? "";
process.stdout.write(`
Hatch is running (${env.DATABASE_URL ? "Postgres" : `embedded database in ${dataDir}`}, ${env.NATS_URL ? "NATS" : "in-process bus"}; ready in ${readyMs} ms)

  MCP server:  ${mcpUrl}
  Sign up:     ${hatch.config.baseUrl}/signup
  Connect:     ${mcpUrl} (open it in a browser for one-click buttons)
  Docs:        ${hatch.config.baseUrl}/mcp/docs
  Apps:        ${appsOrigin.replace("//", "//<address>.")} (published apps, each on its own origin)

  Claude Code: claude mcp add --transport http hatch ${mcpUrl}
  Others:      add a remote MCP server with that URL; a browser window opens to sign in.

`);
logger.info("dev ready", { mcp: mcpUrl, ms: readyMs });
