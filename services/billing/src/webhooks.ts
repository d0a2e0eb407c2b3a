import { bindRpc, type RpcBinding } from "@hatch/platform";
import { ProviderWebhookInputSchema, type BillingState, type Plan } from "@hatch/contracts";
import { eq } from "drizzle-orm";
import { z } from "zod";
import type { BillingContext } from "./context.ts";
import { accounts, providerEvents } from "./db/schema.ts";
import { applyBillingUpdate } from "./provider/apply.ts";
import type { BillingUpdate } from "./provider/types.ts";

/**
 * `rpc.billing.webhook`: a Stripe event the gateway verified (signature and age) and forwards as received. It becomes
 * a BillingUpdate applied once per event id (applyBillingUpdate): a replay is a duplicate, an event older than the
 * last one applied to that account changes nothing, an unknown customer is recorded and ignored. Event types Hatch
 * does not act on are recorded too, so a replay of them is a duplicate as well.
 *
 * No signed context: nobody acts here, Stripe does; the gateway is the only caller on the internal bus and it
 * forwards only what carried Stripe's signature.
 */
export function webhookRpc(ctx: BillingContext): RpcBinding {
  const prices = ctx.config.stripe?.prices;
  // Prices of other products of the same Stripe account are not Hatch plans: their subscriptions change nothing.
  const planOfPrice = (priceId: string): Plan | null =>
    priceId === prices?.pro ? "pro" : priceId === prices?.team ? "team" : null;
  return bindRpc(
    ProviderWebhookInputSchema,
    async ({ input, log }) => {
      const event = EventSchema.safeParse(input.event);
      if (!event.success) {
        log.warn("stripe event without id, type or object ignored");
        return { handled: false, duplicate: false };
      }
      const { id, type } = event.data;
      const update = await toBillingUpdate(ctx, event.data, planOfPrice);
      if (!update) {
        const recorded = await ctx.db
          .insert(providerEvents)
          .values({ id, type })
          .onConflictDoNothing()
          .returning({ id: providerEvents.id });
        log.info("stripe event recorded, nothing to change", { event: id, type });
        return { handled: false, duplicate: recorded.length === 0 };
      }
      const result = await applyBillingUpdate(ctx.db, log, update);
      log.info("stripe event processed", { event: id, type, ...result });
      return result;
    },
    { requiresContext: false, writes: true },
  );
}

/** The parts of a Stripe event Hatch reads; everything else (and there is no card number in any of them) is ignored. */
const EventSchema = z.object({
  id: z.string().min(1),
  type: z.string().min(1),
  created: z.number(),
  data: z.object({
    object: z.record(z.string(), z.unknown()),
    previous_attributes: z.record(z.string(), z.unknown()).optional(),
  }),
});
type StripeEvent = z.infer<typeof EventSchema>;

const SubscriptionSchema = z.object({
  id: z.string(),
  customer: z.string(),
  status: z.string(),
  current_period_end: z.number().nullish(),
  items: z.object({
    data: z.array(
      z.object({
        price: z.object({ id: z.string() }),
        quantity: z.number().int().nullish(),
        current_period_end: z.number().nullish(),
      }),
    ),
  }),
});

/** Stripe's subscription statuses in Hatch's words; null = not started yet (incomplete): nothing changes. */
const STATES: Record<string, BillingState | null> = {
  active: "active",
  trialing: "trialing",
  past_due: "past_due",
  unpaid: "suspended",
  paused: "suspended",
  canceled: "canceled",
  incomplete_expired: "canceled",
  incomplete: null,
};

async function toBillingUpdate(
  ctx: BillingContext,
  event: StripeEvent,
  planOfPrice: (priceId: string) => Plan | null,
): Promise<BillingUpdate | null> {
  const object = event.data.object;
  const base = { id: event.id, type: event.type, at: new Date(event.created * 1000) };
  switch (event.type) {
    case "checkout.session.completed": {
      // Both modes leave a card with Stripe; the subscription itself arrives as customer.subscription.created.
      const customer = idOf(object.customer);
      return customer ? { ...base, customerId: customer, cardOnFile: true } : null;
    }
    case "customer.subscription.created":
    case "customer.subscription.updated":
    case "customer.subscription.deleted": {
      const sub = SubscriptionSchema.safeParse({ ...object, customer: idOf(object.customer) });
      if (!sub.success) return null;
      const item = sub.data.items.data[0];
      const plan = item ? planOfPrice(item.price.id) : null;
      const state = event.type === "customer.subscription.deleted" ? "canceled" : STATES[sub.data.status];
      if (!plan || !state) return null;
      const periodEnd = item?.current_period_end ?? sub.data.current_period_end;
      return {
        ...base,
        customerId: sub.data.customer,
        subscription: {
          id: sub.data.id,
          plan,
          state,
          seats: Math.max(1, item?.quantity ?? 1),
          currentPeriodEnd: periodEnd ? new Date(periodEnd * 1000) : null,
        },
      };
    }
    case "invoice.paid":
    case "invoice.payment_failed":
      return invoiceUpdate(ctx, event, base);
    case "payment_method.attached":
    case "payment_method.detached": {
      // After a detach the object's customer is null; the previous attributes name it.
      const customer = idOf(object.customer) ?? idOf(event.data.previous_attributes?.customer);
      if (!customer) return null;
      // Removing one card leaves any other: ask Stripe (a failure here makes Stripe send the event again).
      const cardOnFile = event.type === "payment_method.attached" || (await ctx.provider.hasCard(customer));
      return { ...base, customerId: customer, cardOnFile };
    }
    default:
      return null;
  }
}

/**
 * An invoice of the account's subscription moves its state (paid → active, failed → past_due); plan and seats stay
 * what billing has (the invoice does not say them). Invoices of other subscriptions (or one-off ones) change nothing.
 */
async function invoiceUpdate(
  ctx: BillingContext,
  event: StripeEvent,
  base: Pick<BillingUpdate, "id" | "type" | "at">,
): Promise<BillingUpdate | null> {
  const object = event.data.object;
  const customer = idOf(object.customer);
  const parent = object.parent as { subscription_details?: { subscription?: unknown } } | null | undefined;
  const subscription = idOf(parent?.subscription_details?.subscription) ?? idOf(object.subscription);
  if (!customer || !subscription) return null;
  const [account] = await ctx.db.select().from(accounts).where(eq(accounts.customerId, customer));
  // Unknown customer: let applyBillingUpdate record and ignore it like any other.
  if (!account) return { ...base, customerId: customer };
  if (account.subscriptionId !== subscription) return null;
  const state: BillingState = event.type === "invoice.paid" ? "active" : "past_due";
  return {
    ...base,
    customerId: customer,
    subscription: {
      id: subscription,
      plan: account.plan,
      state,
      seats: account.seats,
      currentPeriodEnd: account.currentPeriodEnd,
    },
  };
}

/** Stripe sends either an id or an expanded object. */
function idOf(value: unknown): string | null {
  if (typeof value === "string" && value) return value;
  if (value && typeof value === "object" && typeof (value as { id?: unknown }).id === "string")
    return (value as { id: string }).id;
  return null;
}
