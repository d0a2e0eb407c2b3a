import type { Database } from "@hatch/shared";
import type { BillingConfig } from "../config.ts";
import { createLocalProvider } from "./local.ts";
import type { PaymentProvider } from "./types.ts";

/** Stripe when STRIPE_SECRET_KEY is set, else the local provider whose pages the gateway serves. */
export function createProvider(config: BillingConfig, db: Database): PaymentProvider {
  if (config.stripe) {
    // TODO(stripe helper): return createStripeProvider(config.stripe, config.baseUrl) from ./stripe.ts.
    throw new Error("the Stripe provider is not wired yet: unset STRIPE_SECRET_KEY to use the local provider");
  }
  return createLocalProvider(db, config.baseUrl);
}
