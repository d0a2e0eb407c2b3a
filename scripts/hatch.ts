import type { PGlite } from "@electric-sql/pglite";
import {
  createGateway,
  deleteSessionBucket,
  gatewayConfig,
  GATEWAY_MIGRATIONS,
  type Gateway,
  type GatewayConfig,
} from "@hatch/gateway";
import {
  createMemoryBus,
  createNatsBus,
  deleteEventsStream,
  deleteRateBucket,
  isNatsBus,
  openEmbeddedPostgres,
  openServiceDatabase,
  type Bus,
  type Database,
  type DatabaseHandle,
  type DatabaseSource,
  type Logger,
  type PostgresPoolSettings,
  type RunningService,
  type ServiceDeps,
  type ShutdownStep,
} from "@hatch/platform";
import { deriveKey, type ServiceName } from "@hatch/contracts";
import { APPS_MIGRATIONS, startAppsService } from "@hatch/apps";
import { BILLING_MIGRATIONS, startBillingService } from "@hatch/billing";
import { DOMAINS_MIGRATIONS, startDomainsService } from "@hatch/domains";
import { ORGS_MIGRATIONS, startOrgsService } from "@hatch/orgs";

/** Every service's entry point; the launchers are the only code that imports all of them. */
export const SERVICES: Record<
  ServiceName,
  { migrations: string; start: (deps: ServiceDeps) => Promise<RunningService> }
> = {
  orgs: { migrations: ORGS_MIGRATIONS, start: startOrgsService },
  apps: { migrations: APPS_MIGRATIONS, start: startAppsService },
  domains: { migrations: DOMAINS_MIGRATIONS, start: startDomainsService },
  billing: { migrations: BILLING_MIGRATIONS, start: startBillingService },
};

export interface HatchOptions {
  secret: string;
  logger: Logger;
  port?: number;
  baseUrl?: string;
  /** Postgres server; without it, PGlite (in `pgliteDir`, or in memory). */
  databaseUrl?: string;
  /** How each schema's pool uses it (DB_POOL_SIZE, DB_IDLE_TIMEOUT_MS, ...: databaseSettingsFrom). */
  databaseSettings?: PostgresPoolSettings;
  pgliteDir?: string;
  /** A ready embedded database to use instead (tests: a copy of a migrated template); closed by close(). */
  pglite?: PGlite;
  /** NATS server; without it, the in-process bus. */
  natsUrl?: string;
  /** Copies of each JetStream stream and bucket (NATS_REPLICAS); default 1. */
  natsReplicas?: number;
  /** Wait for NATS at start, with a log line each try, instead of failing (`bun run dev`). */
  waitForNats?: boolean;
  busPrefix?: string;
  /** Which services to run in this process (default all). */
  services?: ServiceName[];
  gatewayConfig?: Partial<GatewayConfig>;
  /** Settings the services read (APP_PORT, BLOB_DIR, S3_*, ...); default process.env. */
  serviceEnv?: Record<string, string | undefined>;
  fetchClientMetadata?: typeof fetch;
  /** Deletes the JetStream events stream on close (test runs, each under its own bus prefix). */
  dropEventsStreamOnClose?: boolean;
}

export interface Hatch {
  config: GatewayConfig;
  gateway: Gateway;
  bus: Bus;
  services: Map<ServiceName, RunningService>;
  /** Each service's database handle (tests look at and seed what a service stores). */
  databases: Map<ServiceName, Database>;
  /** The gateway's database handle (tests look at users and sessions). */
  gatewayDb: Database;
  /** Stops one service (tests of "a service that is down"). */
  stopService(name: ServiceName): Promise<void>;
  /** Starts a stopped service again, on the same database and bus. */
  startService(name: ServiceName): Promise<void>;
  close(): Promise<void>;
  /** close() as separate steps for a bounded shutdown: one that hangs (a drain against a dead NATS) leaves the rest their time. */
  closeSteps(): ShutdownStep[];
}

/** Assembles gateway and services in one process: the embedded default, or against real servers. */
export async function startHatch(options: HatchOptions): Promise<Hatch> {
  const config = gatewayConfig({
    ...options.gatewayConfig,
    secret: options.secret,
    port: options.port,
    baseUrl: options.baseUrl,
  });
  const bus = options.natsUrl
    ? await createNatsBus({
        url: options.natsUrl,
        prefix: options.busPrefix,
        name: "hatch",
        logger: options.logger,
        replicas: options.natsReplicas,
        waitForServer: options.waitForNats,
      })
    : createMemoryBus({ logger: options.logger });
  const pglite = options.databaseUrl ? undefined : (options.pglite ?? (await openEmbeddedPostgres(options.pgliteDir)));
  const source: DatabaseSource = pglite
    ? { kind: "pglite", client: pglite }
    : { kind: "postgres", url: options.databaseUrl!, ...options.databaseSettings };

  const handles: DatabaseHandle[] = [];
  const open = async (schema: string, migrationsFolder: string) => {
    const handle = await openServiceDatabase(source, {
      schema,
      migrationsFolder,
      waitWhileBusy: options.logger,
      logger: options.databaseSettings ? options.logger : undefined,
    });
    handles.push(handle);
    return handle.db;
  };
  const contextKey = deriveKey(options.secret, "ctx");
  const services = new Map<ServiceName, RunningService>();
  const databases = new Map<ServiceName, Database>();
  const given = options.serviceEnv ?? process.env;
  // Services that link back to the gateway (sign-in, confirm and invitation pages) use its public address.
  const env = { ...given, BASE_URL: given.BASE_URL ?? config.baseUrl };
  const start = async (name: ServiceName) => {
    const db = databases.get(name)!;
    const logger = options.logger.child({ service: name });
    services.set(name, await SERVICES[name].start({ bus, db, contextKey, secret: options.secret, env, logger }));
  };
  for (const name of options.services ?? (Object.keys(SERVICES) as ServiceName[])) {
    databases.set(name, await open(name, SERVICES[name].migrations));
    await start(name);
  }
  const gatewayDb = await open("gateway", GATEWAY_MIGRATIONS);
  const gateway = createGateway({
    config,
    bus,
    db: gatewayDb,
    logger: options.logger.child({ service: "gateway" }),
    fetchClientMetadata: options.fetchClientMetadata,
  });

  const hatch: Hatch = {
    config,
    gateway,
    bus,
    services,
    databases,
    gatewayDb,
    async stopService(name) {
      await services.get(name)?.stop();
      services.delete(name);
    },
    async startService(name) {
      if (services.has(name)) return;
      if (!databases.has(name)) throw new Error(`${name} was never started in this process`);
      await start(name);
    },
    async close() {
      for (const step of hatch.closeSteps()) await step.run();
    },
    closeSteps() {
      return [
        { name: "close MCP sessions", share: 0.1, run: () => gateway.close() },
        // In parallel: one service stuck on its database does not keep the others from flushing.
        {
          name: "stop services (outbox, stats, logs, app host)",
          share: 0.4,
          run: () => Promise.all([...services.values()].map((service) => service.stop())),
        },
        {
          name: "drain the bus",
          share: 0.2,
          run: async () => {
            if (options.dropEventsStreamOnClose && isNatsBus(bus)) {
              await deleteEventsStream(bus).catch(() => {});
              await deleteRateBucket(bus).catch(() => {});
              await deleteRateBucket(bus, "apps").catch(() => {});
              await deleteSessionBucket(bus).catch(() => {});
            }
            await bus.drain();
          },
        },
        {
          name: "close the database",
          run: async () => {
            for (const handle of handles) await handle.close();
            await pglite?.close();
          },
        },
      ];
    },
  };
  return hatch;
}
