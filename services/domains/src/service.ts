import {
  bindRpc,
  createOutboxRelay,
  EntitlementsCache,
  eventStreamFor,
  startService,
  type RunningService,
  type ServiceDeps,
} from "@hatch/platform";
import { RpcRequestSchema, rpcMethods, TOOL_CONTRACTS } from "@hatch/contracts";
import { loadDomainsConfig } from "./config.ts";
import { domainsConfirmKey, type DomainsContext } from "./context.ts";
import { outbox } from "./db/schema.ts";
import { createDnsLookup } from "./dns/lookup.ts";
import { startAppDeletedConsumer } from "./hostnames/release.ts";
import { startDomainsHttp, type DomainsHttp } from "./http/server.ts";
import { jobKinds } from "./jobs/kinds.ts";
import { JobQueue, type JobKind } from "./jobs/queue.ts";
import { createRegistrar } from "./registrar/index.ts";
import { customCountRpc } from "./rpc/custom-count.ts";
import { domainProgressRpc } from "./rpc/domain-progress.ts";
import { resolveHostRpc } from "./rpc/resolve-host.ts";
import { domainsTools } from "./tools/index.ts";

export const DOMAINS_VERSION = "0.2.0";
export const DOMAINS_MIGRATIONS = new URL("../drizzle", import.meta.url).pathname;

/** The running domains service; `context` lets tests look at hostnames and jobs, `http` is the ask listener. */
export interface DomainsService extends RunningService {
  readonly context: DomainsContext;
  readonly http: DomainsHttp | null;
}

export interface DomainsServiceOptions {
  /** Job kinds beyond jobKinds() (tests: the two-copies test adds a counting kind in its child entry point). */
  extraJobKinds?: Record<string, JobKind>;
}

/**
 * Answers the domains tools and `host.resolve` on the bus, runs this copy's share of the stage work (the job queue:
 * any number of copies may run), and serves the edge's TLS `ask` when DOMAINS_HTTP_PORT is set.
 */
export async function startDomainsService(
  deps: ServiceDeps,
  options: DomainsServiceOptions = {},
): Promise<DomainsService> {
  const config = loadDomainsConfig(deps.env);
  let ctx: DomainsContext | undefined;
  const kinds = { ...jobKinds(() => ctx!), ...options.extraJobKinds };
  const jobs = new JobQueue({
    db: deps.db,
    logger: deps.logger,
    kinds,
    pollMs: config.jobPollMs,
    leaseMs: config.jobLeaseMs,
  });
  ctx = {
    db: deps.db,
    config,
    logger: deps.logger,
    bus: deps.bus,
    confirmKey: domainsConfirmKey(deps.secret),
    contextKey: deps.contextKey,
    registrar: createRegistrar(config, deps.db),
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
      // The runtime's health answer plus this copy's id (its job claims carry it in `locked_by`): with several copies
      // running, an operator (and the two-copies test) sees which one answered.
      health: bindRpc(
        RpcRequestSchema.shape.input,
        async () => ({ service: "domains", version: DOMAINS_VERSION, copy: jobs.copyId }),
        { requiresContext: false },
      ),
      [rpcMethods.domains.resolveHost]: resolveHostRpc(ctx),
      [rpcMethods.domains.progress]: domainProgressRpc(ctx),
      [rpcMethods.domains.customCount]: customCountRpc(ctx),
    },
    outbox: createOutboxRelay({ db: deps.db, table: outbox, stream: eventStreamFor(deps.bus), logger: deps.logger }),
    logger: deps.logger,
  });
  const http = startDomainsHttp(ctx);
  const appDeleted = startAppDeletedConsumer(ctx);
  jobs.start();
  deps.logger.info("domains copy started", {
    copy: jobs.copyId,
    httpPort: http?.port ?? null,
    jobKinds: Object.keys(kinds),
  });
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
