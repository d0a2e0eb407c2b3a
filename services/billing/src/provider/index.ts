import type { Database } from "@hatch/platform";
import type { BillingConfig } from "../config.ts";
import { createLocalProvider } from "./local.ts";
import { StripeProvider } from "./stripe.ts";
import type { PaymentProvider } from "./types.ts";

/** Stripe when STRIPE_SECRET_KEY is set, else the local provider whose pages the gateway serves. */
export function createProvider(config: BillingConfig, db: Database): PaymentProvider {
  if (config.stripe) return new StripeProvider(config.stripe);
  return createLocalProvider(db, config.baseUrl);
}
