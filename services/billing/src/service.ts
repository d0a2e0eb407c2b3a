import { createOutboxRelay, eventStreamFor, rpcMethods, startService, TOOL_CONTRACTS, type RunningService, type ServiceDeps } from "@hatch/shared";
import { loadBillingConfig } from "./config.ts";
import type { BillingContext } from "./context.ts";
import { outbox } from "./db/schema.ts";
import { StripeProvider } from "./provider/stripe.ts";
import type { PaymentProvider } from "./provider/types.ts";
import { startUsageConsumer } from "./usage.ts";
import { webhookRpc } from "./webhooks.ts";

export const BILLING_VERSION = "0.1.0";
export const BILLING_MIGRATIONS = new URL("../drizzle", import.meta.url).pathname;

/** Answers on the bus for its tools and rpc methods, and counts usage from events. */
export async function startBillingService(deps: ServiceDeps): Promise<RunningService> {
  const config = loadBillingConfig(deps.env);
  const ctx: BillingContext = { db: deps.db, config, provider: providerOf(config), logger: deps.logger, bus: deps.bus };
  const service = await startService({
    name: "billing",
    version: BILLING_VERSION,
    bus: deps.bus,
    contextKey: deps.contextKey,
    contracts: TOOL_CONTRACTS,
    tools: [],
    rpc: {
      // helper "stripe": Stripe's webhooks, forwarded by the gateway's POST /webhooks/stripe.
      [rpcMethods.billing.webhook]: webhookRpc(ctx),
    },
    outbox: createOutboxRelay({ db: deps.db, table: outbox, stream: eventStreamFor(deps.bus), logger: deps.logger }),
    logger: deps.logger,
  });
  const usage = startUsageConsumer(ctx);
  return {
    ...service,
    async stop() {
      await usage.stop();
      await service.stop();
    },
  };
}

// Minimal wiring until provider/index.ts (createProvider, helper "billing") lands: Stripe when configured.
function providerOf(config: ReturnType<typeof loadBillingConfig>): PaymentProvider {
  if (config.stripe) return new StripeProvider(config.stripe);
  const missing = async (): Promise<never> => {
    throw new Error("the local payment provider is not built yet");
  };
  return { kind: "local", createCustomer: missing, checkoutUrl: missing, portalUrl: missing, charge: missing, refund: missing };
}
