import { createLogger } from "@hatch/platform";
import { type ServiceName } from "@hatch/contracts";
import { TEST_PASSWORD_COST, type GatewayConfig } from "@hatch/gateway";
import { startHatch, type Hatch } from "../../scripts/hatch.ts";
import { freePort, realServers, testBlobDir, uniqueName, type Mode } from "./servers.ts";
import { embeddedDatabase, migratedDatabase } from "./templates.ts";

export const TEST_SECRET = "test-secret-".padEnd(48, "x");

export interface TestHatch extends Hatch {
  mode: Mode;
  baseUrl: string;
  mcpUrl: string;
  /** The app host's bare origin, e.g. http://localhost:41234 (apps open at http://<address>.localhost:41234). */
  appHostUrl: string;
  /** Stops the HTTP server, the services, and drops the run's database. */
  stop(): Promise<void>;
}

export interface TestHatchOptions {
  services?: ServiceName[];
  fetchClientMetadata?: typeof fetch;
  /** Captures log lines (at info level) instead of printing warnings. */
  logWrite?: (line: string) => void;
  /** Extra service settings (S3_*, ...); the app host always gets a free port and a fresh blob folder. */
  serviceEnv?: Record<string, string>;
  /** Gateway settings beyond the defaults (e.g. `devPages: true`, which only `bun run dev` turns on). */
  gatewayConfig?: Partial<GatewayConfig>;
  /** Real mode: the URL the processes connect to for the run's fresh database (e.g. through a proxy a test cuts). */
  databaseVia?: (url: string) => string;
}

/** The whole service on a real port: embedded (in-process bus, in-memory PGlite) or on the real servers. */
export async function startTestHatch(mode: Mode, options: TestHatchOptions = {}): Promise<TestHatch> {
  const port = freePort();
  // Every schema migrated already: a copy of this process's template (the boot's own migrations find nothing to do).
  const database = mode === "real" ? await migratedDatabase(realServers!.databaseUrl) : null;
  const hatch = await startHatch({
    secret: TEST_SECRET,
    logger: options.logWrite
      ? createLogger({ level: "info", write: options.logWrite })
      : createLogger({ level: (process.env.LOG_LEVEL as "warn") ?? "warn" }),
    port,
    databaseUrl: database ? (options.databaseVia?.(database.url) ?? database.url) : undefined,
    pglite: database ? undefined : await embeddedDatabase(),
    natsUrl: mode === "real" ? realServers!.natsUrl : undefined,
    busPrefix: uniqueName("bus"),
    services: options.services,
    // Plan limits only where a test is about them (BILLING_ENFORCE_LIMITS: "true"): others publish and invite freely.
    serviceEnv: { APP_PORT: "0", BLOB_DIR: testBlobDir(), BILLING_ENFORCE_LIMITS: "false", ...options.serviceEnv },
    fetchClientMetadata: options.fetchClientMetadata,
    // Still argon2id, at a test cost: a password hash takes about a millisecond instead of a few hundred.
    gatewayConfig: { passwordCost: TEST_PASSWORD_COST, ...options.gatewayConfig },
    dropEventsStreamOnClose: true,
  });
  const server = hatch.gateway.listen({ port, hostname: "127.0.0.1" });
  return {
    ...hatch,
    mode,
    baseUrl: hatch.config.baseUrl,
    mcpUrl: hatch.config.mcpUrl,
    appHostUrl: hatch.services.get("apps")?.urls?.appHost ?? "",
    async stop() {
      await server.stop(true);
      await hatch.close();
      await database?.drop();
    },
  };
}
