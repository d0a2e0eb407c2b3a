import type { Bus, Database, Logger } from "@hatch/platform";
import type { BillingConfig } from "./config.ts";
import type { PaymentProvider } from "./provider/types.ts";

/** What the billing service's tools, rpc methods and consumers share. */
export interface BillingContext {
  db: Database;
  config: BillingConfig;
  provider: PaymentProvider;
  logger: Logger;
  bus: Bus;
}

/** The billing settings page on the gateway: where a person acts when a limit is reached, and ChatGPT's billing link. */
export function settingsUrl(config: Pick<BillingConfig, "baseUrl">): string {
  return `${config.baseUrl}/dashboard/billing`;
}
