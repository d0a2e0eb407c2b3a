import {
  createOutboxRelay,
  eventStreamFor,
  startService,
  type RunningService,
  type ServiceDeps,
} from "@hatch/platform";
import { rpcMethods, TOOL_CONTRACTS } from "@hatch/contracts";
import { loadBillingConfig } from "./config.ts";
import type { BillingContext } from "./context.ts";
import { outbox } from "./db/schema.ts";
import { createProvider } from "./provider/index.ts";
import { cardCheckRpc, chargeRpc } from "./rpc/charge.ts";
import { entitlementsRpc } from "./rpc/entitlements.ts";
import { refundRpc } from "./rpc/refund.ts";
import { localActRpc, settingsLinkRpc, settingsRpc } from "./rpc/settings.ts";
import { receiptsRpc } from "./rpc/receipts.ts";
import { billingTools } from "./tools/index.ts";
import { startUsageConsumer } from "./usage.ts";
import { webhookRpc } from "./webhooks.ts";

export const BILLING_VERSION = "0.2.0";
export const BILLING_MIGRATIONS = new URL("../drizzle", import.meta.url).pathname;

/** The running billing service; `context` lets tests look at accounts and charges. */
export interface BillingService extends RunningService {
  readonly context: BillingContext;
}

/**
 * Answers the billing tool and rpc (entitlements, charge, the settings pages, provider webhooks) on the bus, and
 * counts usage from events.
 */
export async function startBillingService(deps: ServiceDeps): Promise<BillingService> {
  const config = loadBillingConfig(deps.env);
  const ctx: BillingContext = {
    db: deps.db,
    config,
    provider: createProvider(config, deps.db),
    logger: deps.logger,
    bus: deps.bus,
  };
  const service = await startService({
    name: "billing",
    version: BILLING_VERSION,
    bus: deps.bus,
    contextKey: deps.contextKey,
    contracts: TOOL_CONTRACTS,
    tools: billingTools(ctx),
    rpc: {
      [rpcMethods.billing.entitlements]: entitlementsRpc(ctx),
      [rpcMethods.billing.charge]: chargeRpc(ctx),
      [rpcMethods.billing.card]: cardCheckRpc(ctx),
      [rpcMethods.billing.refund]: refundRpc(ctx),
      [rpcMethods.billing.settings]: settingsRpc(ctx),
      [rpcMethods.billing.receipts]: receiptsRpc(ctx),
      [rpcMethods.billing.settingsLink]: settingsLinkRpc(ctx),
      [rpcMethods.billing.localAct]: localActRpc(ctx),
      // Stripe's webhooks, forwarded by the gateway's POST /webhooks/stripe once their signature checked.
      [rpcMethods.billing.webhook]: webhookRpc(ctx),
    },
    outbox: createOutboxRelay({ db: deps.db, table: outbox, stream: eventStreamFor(deps.bus), logger: deps.logger }),
    logger: deps.logger,
  });
  const usage = startUsageConsumer(ctx);
  return {
    name: "billing",
    context: ctx,
    async stop() {
      await usage.stop();
      await service.stop();
    },
  };
}
