import { rpcMethods, startService, TOOL_CONTRACTS, type RunningService, type ServiceDeps } from "@hatch/shared";
import { resolveSessionRpc } from "./rpc/session.ts";
import { orgsTools } from "./tools/index.ts";

export const ORGS_VERSION = "0.1.0";
export const ORGS_MIGRATIONS = new URL("../drizzle", import.meta.url).pathname;

export function startOrgsService(options: ServiceDeps): Promise<RunningService> {
  return startService({
    name: "orgs",
    version: ORGS_VERSION,
    bus: options.bus,
    contextKey: options.contextKey,
    contracts: TOOL_CONTRACTS,
    tools: orgsTools(options.db),
    rpc: { [rpcMethods.orgs.resolveSession]: resolveSessionRpc(options.db) },
    logger: options.logger,
  });
}
