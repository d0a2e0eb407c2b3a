import { MAX_SEATS, type Plan } from "@hatch/contracts";
import Stripe from "stripe";
import type { StripeSettings } from "../config.ts";
import type { ChargeOutcome, CheckoutRequest, OneOffCharge, PaymentProvider, ProviderReceipt } from "./types.ts";

/**
 * The API version every request names (Stripe-Version). Pinned, so a Stripe account's default version never changes
 * the shapes webhooks.ts reads; the SDK's types are for this version.
 */
export const STRIPE_API_VERSION = "2026-10-28.endive" as const;

type PaidPlan = Exclude<Plan, "free" | "enterprise">;

/** Stripe through its SDK. No card detail ever passes through here: cards are typed on Stripe's own pages. */
export class StripeProvider implements PaymentProvider {
  readonly kind = "stripe" as const;
  readonly client: Stripe;
  private readonly prices: Record<PaidPlan, string>;

  constructor(settings: StripeSettings) {
    this.prices = settings.prices;
    this.client = new Stripe(settings.secretKey, {
      apiVersion: STRIPE_API_VERSION,
      maxNetworkRetries: 1,
      ...apiOrigin(settings.apiUrl),
    });
  }

  async createCustomer(account: { accountId: string; email: string; name: string }): Promise<string> {
    // Keyed by account: two first uses at once (or a retry after a lost answer) get the same customer.
    const customer = await this.client.customers.create(
      { email: account.email, name: account.name, metadata: { hatch_account: account.accountId } },
      { idempotencyKey: `hatch-customer-${account.accountId}` },
    );
    return customer.id;
  }

  async checkoutUrl(request: CheckoutRequest): Promise<string> {
    const common = { customer: request.customerId, success_url: request.successUrl, cancel_url: request.cancelUrl };
    let session: Stripe.Checkout.Session;
    if (request.mode === "setup") {
      session = await this.client.checkout.sessions.create({ ...common, mode: "setup", currency: "usd" });
    } else {
      if (!request.plan) throw new Error("a subscription checkout needs a plan");
      // Team is paid per seat: the seats filled in, which the person may change on Stripe's page.
      const item: Stripe.Checkout.SessionCreateParams.LineItem =
        request.plan === "team"
          ? {
              price: this.prices.team,
              quantity: Math.min(MAX_SEATS, Math.max(1, request.seats ?? 1)),
              adjustable_quantity: { enabled: true, minimum: 1, maximum: MAX_SEATS },
            }
          : { price: this.prices[request.plan], quantity: 1 };
      session = await this.client.checkout.sessions.create({
        ...common,
        mode: "subscription",
        line_items: [item],
        subscription_data: { metadata: { hatch_plan: request.plan } },
      });
    }
    if (!session.url) throw new Error("Stripe returned a checkout session without a URL");
    return session.url;
  }

  async portalUrl(customerId: string, returnUrl: string): Promise<string> {
    const session = await this.client.billingPortal.sessions.create({ customer: customerId, return_url: returnUrl });
    return session.url;
  }

  /** The portal's confirm step of one update: the subscription item's quantity becomes `seats`. */
  async seatsUrl(request: {
    customerId: string;
    subscriptionId: string;
    seats: number;
    returnUrl: string;
  }): Promise<string> {
    const subscription = await this.client.subscriptions.retrieve(request.subscriptionId);
    const item = subscription.items.data.find((i) => i.price.id === this.prices.team) ?? subscription.items.data[0];
    if (!item) throw new Error("the subscription has no item to change");
    const session = await this.client.billingPortal.sessions.create({
      customer: request.customerId,
      return_url: request.returnUrl,
      flow_data: {
        type: "subscription_update_confirm",
        subscription_update_confirm: {
          subscription: request.subscriptionId,
          items: [{ id: item.id, quantity: request.seats }],
        },
        after_completion: { type: "redirect", redirect: { return_url: request.returnUrl } },
      },
    });
    return session.url;
  }

  /**
   * An off-session PaymentIntent on the customer's card, confirmed at once. Stripe's idempotency key is the caller's:
   * a retry after a lost answer gets the first attempt's PaymentIntent, never a second charge.
   */
  async charge(charge: OneOffCharge): Promise<ChargeOutcome> {
    let paymentMethod: string | null;
    try {
      paymentMethod = await this.cardOf(charge.customerId);
    } catch (error) {
      return { status: "failed", message: failedMessage(error) };
    }
    if (!paymentMethod)
      return {
        status: "refused",
        reason: "no_card",
        message: "There is no card on file. Add a card on the billing page, then try again.",
      };
    try {
      const intent = await this.client.paymentIntents.create(
        {
          amount: charge.amountMinor,
          currency: charge.currency.toLowerCase(),
          customer: charge.customerId,
          payment_method: paymentMethod,
          description: charge.description,
          off_session: true,
          confirm: true,
        },
        { idempotencyKey: charge.idempotencyKey },
      );
      if (intent.status === "succeeded") return { status: "charged", chargeId: intent.id };
      if (intent.status === "requires_action" || intent.status === "requires_payment_method") {
        return {
          status: "refused",
          reason: "declined",
          message:
            "The bank asks the card holder to confirm this payment. Update the card on the billing page, then try again.",
        };
      }
      return { status: "failed", message: "The payment did not complete. Nothing was charged; try again later." };
    } catch (error) {
      if (error instanceof Stripe.errors.StripeCardError) {
        // Stripe's decline message is about the card only ("Your card was declined."); never the card's details.
        return {
          status: "refused",
          reason: "declined",
          message: "The card on file was declined. Use another card on the billing page, then try again.",
        };
      }
      return { status: "failed", message: failedMessage(error) };
    }
  }

  async refund(chargeId: string, idempotencyKey: string): Promise<void> {
    await this.client.refunds.create({ payment_intent: chargeId }, { idempotencyKey });
  }

  async hasCard(customerId: string): Promise<boolean> {
    return (await this.cardOf(customerId)) !== null;
  }

  /** The customer's invoices (a plan's periods: Team's seats are a line's quantity), newest first; drafts left out. */
  async receipts(customerId: string, limit: number): Promise<ProviderReceipt[]> {
    const invoices = await this.client.invoices.list({ customer: customerId, limit });
    return invoices.data
      .filter((invoice) => invoice.status && invoice.status !== "draft")
      .map((invoice) => ({
        id: invoice.id ?? "",
        number: invoice.number,
        date: new Date(invoice.created * 1000),
        status: invoice.status as ProviderReceipt["status"],
        totalMinor: invoice.total,
        currency: invoice.currency.toUpperCase(),
        lines: invoice.lines.data.map((line) => ({
          description: line.description ?? "",
          quantity: line.quantity,
          amountMinor: line.amount,
        })),
        url: invoice.hosted_invoice_url ?? null,
      }));
  }

  /** The card an off-session charge uses: the customer's default, else the first one attached. */
  private async cardOf(customerId: string): Promise<string | null> {
    const customer = await this.client.customers.retrieve(customerId);
    if (customer.deleted) return null;
    const preferred = customer.invoice_settings?.default_payment_method;
    if (preferred) return typeof preferred === "string" ? preferred : preferred.id;
    const cards = await this.client.customers.listPaymentMethods(customerId, { type: "card", limit: 1 });
    return cards.data[0]?.id ?? null;
  }
}

/** host, port and protocol of STRIPE_API_URL (a local fake in tests); none = Stripe's own API. */
function apiOrigin(apiUrl: string | null): { host?: string; port?: number; protocol?: "http" | "https" } {
  if (!apiUrl) return {};
  const url = new URL(apiUrl);
  const protocol = url.protocol === "http:" ? "http" : "https";
  return { host: url.hostname, port: url.port ? Number(url.port) : protocol === "http" ? 80 : 443, protocol };
}

/** A message for the person; Stripe's own error text stays in our logs' request id, never in an answer. */
function failedMessage(error: unknown): string {
  if (error instanceof Stripe.errors.StripeConnectionError || error instanceof Stripe.errors.StripeAPIError) {
    return "The payment provider did not answer. Nothing was charged; try again in a few minutes.";
  }
  return "The payment could not be made. Nothing was charged; try again later or check the billing page.";
}
