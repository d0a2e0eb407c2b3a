import { createOutboxRelay, EntitlementsCache, eventStreamFor, rpcMethods, startService, TOOL_CONTRACTS, type RunningService, type ServiceDeps } from "@hatch/shared";
import { loadDomainsConfig } from "./config.ts";
import { domainsConfirmKey, type DomainsContext } from "./context.ts";
import { outbox } from "./db/schema.ts";
import { createDnsLookup } from "./dns/lookup.ts";
import { startAppDeletedConsumer } from "./hostnames/release.ts";
import { startDomainsHttp, type DomainsHttp } from "./http/server.ts";
import { jobKinds } from "./jobs/kinds.ts";
import { JobQueue } from "./jobs/queue.ts";
import { createRegistrar } from "./registrar/index.ts";
import { resolveHostRpc } from "./rpc/resolve-host.ts";
import { domainsTools } from "./tools/index.ts";

export const DOMAINS_VERSION = "0.2.0";
export const DOMAINS_MIGRATIONS = new URL("../drizzle", import.meta.url).pathname;

/** The running domains service; `context` lets tests look at hostnames and jobs, `http` is the ask listener. */
export interface DomainsService extends RunningService {
  readonly context: DomainsContext;
  readonly http: DomainsHttp | null;
}

/**
 * Answers the domains tools and `host.resolve` on the bus, runs this copy's share of the stage work (the job queue:
 * any number of copies may run), and serves the edge's TLS `ask` when DOMAINS_HTTP_PORT is set.
 */
export async function startDomainsService(deps: ServiceDeps): Promise<DomainsService> {
  const config = loadDomainsConfig(deps.env);
  let ctx: DomainsContext | undefined;
  const jobs = new JobQueue({ db: deps.db, logger: deps.logger, kinds: jobKinds(() => ctx!), pollMs: config.jobPollMs, leaseMs: config.jobLeaseMs });
  ctx = {
    db: deps.db,
    config,
    logger: deps.logger,
    bus: deps.bus,
    confirmKey: domainsConfirmKey(deps.secret),
    contextKey: deps.contextKey,
    registrar: createRegistrar(config),
    dns: createDnsLookup(config.dnsServers),
    entitlements: new EntitlementsCache(deps.bus, deps.logger),
    jobs,
  };
  const service = await startService({
    name: "domains",
    version: DOMAINS_VERSION,
    bus: deps.bus,
    contextKey: deps.contextKey,
    confirmKey: ctx.confirmKey,
    contracts: TOOL_CONTRACTS,
    tools: domainsTools(ctx),
    rpc: {
      [rpcMethods.domains.resolveHost]: resolveHostRpc(ctx),
    },
    outbox: createOutboxRelay({ db: deps.db, table: outbox, stream: eventStreamFor(deps.bus), logger: deps.logger }),
    logger: deps.logger,
  });
  const http = startDomainsHttp(ctx);
  const appDeleted = startAppDeletedConsumer(ctx);
  jobs.start();
  return {
    name: "domains",
    context: ctx,
    http,
    async stop() {
      await appDeleted.stop();
      await http?.stop();
      await jobs.stop();
      await service.stop();
      ctx!.entitlements.close();
    },
  };
}
