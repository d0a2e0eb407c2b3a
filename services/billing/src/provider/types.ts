import type { Plan } from "@hatch/contracts";

// The payment provider behind billing: Stripe through its SDK (stripe.ts) when STRIPE_SECRET_KEY is set, else the
// local provider (local.ts) whose checkout and portal pages the gateway serves. Both report what changed as
// BillingUpdates, which apply.ts writes, once per update id.

export interface CheckoutRequest {
  customerId: string;
  /** setup = add a card; subscription = start or change a paid plan (with a card). */
  mode: "setup" | "subscription";
  plan?: Exclude<Plan, "free" | "enterprise">;
  /** For team: the seats filled in; the person may choose another number on the page. */
  seats?: number;
  /** Where the person lands after finishing (success) or giving up (cancel). */
  successUrl: string;
  cancelUrl: string;
}

export interface OneOffCharge {
  customerId: string;
  amountMinor: number;
  currency: "USD";
  description: string;
  idempotencyKey: string;
}

export type ChargeOutcome =
  | { status: "charged"; chargeId: string }
  /** The card was declined, or there is none: the person must act. */
  | { status: "refused"; reason: "no_card" | "declined"; message: string }
  | { status: "failed"; message: string };

export interface PaymentProvider {
  readonly kind: "stripe" | "local";
  /** Creates the provider's customer for an account (idempotent by account id). */
  createCustomer(account: { accountId: string; email: string; name: string }): Promise<string>;
  /** A page where the person adds a card or starts a plan: Stripe Checkout, or the local checkout page. */
  checkoutUrl(request: CheckoutRequest): Promise<string>;
  /** A page where the person manages card, plan and cancellation: Stripe's customer portal, or the local one. */
  portalUrl(customerId: string, returnUrl: string): Promise<string>;
  /**
   * A page where the person confirms paying for `seats` seats on their subscription (the quantity of its item):
   * Stripe's portal at the confirm step of that update, or the local portal with the number filled in.
   */
  seatsUrl(request: { customerId: string; subscriptionId: string; seats: number; returnUrl: string }): Promise<string>;
  /** An off-session charge of the card on file; the same key never charges twice. */
  charge(charge: OneOffCharge): Promise<ChargeOutcome>;
  refund(chargeId: string, idempotencyKey: string): Promise<void>;
  /** Whether the customer still has a card the provider can charge (after one was removed, another may remain). */
  hasCard(customerId: string): Promise<boolean>;
  /** The customer's latest invoices and receipts (a plan's periods, one-off charges), newest first, with their lines. */
  receipts(customerId: string, limit: number): Promise<ProviderReceipt[]>;
}

/** One invoice or receipt as the provider keeps it; amounts in the currency's smallest unit. */
export interface ProviderReceipt {
  id: string;
  number: string | null;
  date: Date;
  status: "paid" | "open" | "void" | "uncollectible" | "draft" | "refunded";
  totalMinor: number;
  currency: string;
  lines: { description: string; quantity: number | null; amountMinor: number }[];
  url: string | null;
}

/**
 * What a provider says changed for one customer, in our words. `id` is the provider's event id (a webhook's, or the
 * local provider's own): applied once. `at` is the provider's time of the change: an update older than the last one
 * applied to that account changes nothing (webhooks arrive out of order).
 */
export interface BillingUpdate {
  id: string;
  type: string;
  customerId: string;
  at: Date;
  subscription?: {
    id: string | null;
    plan: Plan;
    state: "active" | "trialing" | "past_due" | "suspended" | "canceled";
    seats: number;
    currentPeriodEnd: Date | null;
  };
  cardOnFile?: boolean;
}
