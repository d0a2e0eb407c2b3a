import { createGateway, gatewayConfig, GATEWAY_MIGRATIONS, type Gateway, type GatewayConfig } from "@hatch/gateway";
import {
  createMemoryBus,
  createNatsBus,
  deriveKey,
  openEmbeddedPostgres,
  openServiceDatabase,
  type Bus,
  type DatabaseHandle,
  type DatabaseSource,
  type Logger,
  type RunningService,
  type ServiceDeps,
  type ServiceName,
} from "@hatch/shared";
import { APPS_MIGRATIONS, startAppsService } from "@hatch/apps";
import { BILLING_MIGRATIONS, startBillingService } from "@hatch/billing";
import { DOMAINS_MIGRATIONS, startDomainsService } from "@hatch/domains";
import { ORGS_MIGRATIONS, startOrgsService } from "@hatch/orgs";

/** Every service's entry point; the launchers are the only code that imports all of them. */
export const SERVICES: Record<ServiceName, { migrations: string; start: (deps: ServiceDeps) => Promise<RunningService> }> = {
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
  pgliteDir?: string;
  /** NATS server; without it, the in-process bus. */
  natsUrl?: string;
  busPrefix?: string;
  /** Which services to run in this process (default all). */
  services?: ServiceName[];
  gatewayConfig?: Partial<GatewayConfig>;
  /** Settings the services read (APP_PORT, BLOB_DIR, S3_*, ...); default process.env. */
  serviceEnv?: Record<string, string | undefined>;
  fetchClientMetadata?: typeof fetch;
}

export interface Hatch {
  config: GatewayConfig;
  gateway: Gateway;
  bus: Bus;
  services: Map<ServiceName, RunningService>;
  /** Stops one service (tests of "a service that is down"). */
  stopService(name: ServiceName): Promise<void>;
  close(): Promise<void>;
}

/** Assembles gateway and services in one process: the embedded default, or against real servers. */
export async function startHatch(options: HatchOptions): Promise<Hatch> {
  const config = gatewayConfig({ ...options.gatewayConfig, secret: options.secret, port: options.port, baseUrl: options.baseUrl });
  const bus = options.natsUrl
    ? await createNatsBus({ url: options.natsUrl, prefix: options.busPrefix, name: "hatch", logger: options.logger })
    : createMemoryBus({ logger: options.logger });
  const pglite = options.databaseUrl ? undefined : await openEmbeddedPostgres(options.pgliteDir);
  const source: DatabaseSource = pglite ? { kind: "pglite", client: pglite } : { kind: "postgres", url: options.databaseUrl! };

  const handles: DatabaseHandle[] = [];
  const open = async (schema: string, migrationsFolder: string) => {
    const handle = await openServiceDatabase(source, { schema, migrationsFolder });
    handles.push(handle);
    return handle.db;
  };
  const contextKey = deriveKey(options.secret, "ctx");
  const services = new Map<ServiceName, RunningService>();
  for (const name of options.services ?? (Object.keys(SERVICES) as ServiceName[])) {
    const service = SERVICES[name];
    const logger = options.logger.child({ service: name });
    const db = await open(name, service.migrations);
    const given = options.serviceEnv ?? process.env;
    // Services that link back to the gateway (sign-in, confirm pages) use its public address.
    const env = { ...given, BASE_URL: given.BASE_URL ?? config.baseUrl };
    services.set(name, await service.start({ bus, db, contextKey, secret: options.secret, env, logger }));
  }
  const gateway = createGateway({
    config,
    bus,
    db: await open("gateway", GATEWAY_MIGRATIONS),
    logger: options.logger.child({ service: "gateway" }),
    fetchClientMetadata: options.fetchClientMetadata,
  });

  return {
    config,
    gateway,
    bus,
    services,
    async stopService(name) {
      await services.get(name)?.stop();
      services.delete(name);
    },
    async close() {
      await gateway.close();
      for (const service of services.values()) await service.stop();
      await bus.drain();
      for (const handle of handles) await handle.close();
      await pglite?.close();
    },
  };
}
