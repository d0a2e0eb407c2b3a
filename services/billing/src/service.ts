import { createOutboxRelay, eventStreamFor, startService, TOOL_CONTRACTS, type RunningService, type ServiceDeps } from "@hatch/shared";
import { outbox } from "./db/schema.ts";
import { startUsageConsumer } from "./usage.ts";

export const BILLING_VERSION = "0.1.0";
export const BILLING_MIGRATIONS = new URL("../drizzle", import.meta.url).pathname;

/** Answers on the bus for its tools (until their handlers land, each answers "not available yet") and counts usage. */
export async function startBillingService(deps: ServiceDeps): Promise<RunningService> {
  const service = await startService({
    name: "billing",
    version: BILLING_VERSION,
    bus: deps.bus,
    contextKey: deps.contextKey,
    contracts: TOOL_CONTRACTS,
    tools: [],
    outbox: createOutboxRelay({ db: deps.db, table: outbox, stream: eventStreamFor(deps.bus), logger: deps.logger }),
    logger: deps.logger,
  });
  const usage = startUsageConsumer({ db: deps.db, bus: deps.bus, logger: deps.logger });
  return {
    ...service,
    async stop() {
      await usage.stop();
      await service.stop();
    },
  };
}
