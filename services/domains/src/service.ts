import { startService, TOOL_CONTRACTS, type RunningService, type ServiceDeps } from "@hatch/shared";

export const DOMAINS_VERSION = "0.1.0";
export const DOMAINS_MIGRATIONS = new URL("../drizzle", import.meta.url).pathname;

/** Answers on the bus for its tools; until their handlers land, each answers "not available yet". */
export function startDomainsService(deps: ServiceDeps): Promise<RunningService> {
  return startService({
    name: "domains",
    version: DOMAINS_VERSION,
    bus: deps.bus,
    contextKey: deps.contextKey,
    contracts: TOOL_CONTRACTS,
    tools: [],
    logger: deps.logger,
  });
}
