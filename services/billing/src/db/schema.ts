import { outboxTable } from "@hatch/platform";
import { type BillingState, type Plan } from "@hatch/contracts";
import { bigint, boolean, date, integer, pgSchema, primaryKey, text, timestamp } from "drizzle-orm/pg-core";

/** The billing service's own schema. Rows stay inside the service; tools map them to contract types. */
export const billing = pgSchema("billing");

/**
 * One row per account (personal or company) that billing knows: its customer at the payment provider, plan, state,
 * seats and whether a card is on file. No card detail is ever stored: only the provider's ids and a yes or no.
 */
export const accounts = billing.table("accounts", {
  accountId: text("account_id").primaryKey(),
  provider: text("provider").$type<"stripe" | "local">().notNull(),
  customerId: text("customer_id").notNull().unique(),
  plan: text("plan").$type<Plan>().notNull().default("free"),
  state: text("state").$type<BillingState>().notNull().default("active"),
  seats: integer("seats").notNull().default(1),
  subscriptionId: text("subscription_id"),
  cardOnFile: boolean("card_on_file").notNull().default(false),
  currentPeriodEnd: timestamp("current_period_end", { withTimezone: true }),
  /** The provider time of the last update applied, so an older event arriving late changes nothing. */
  updatedFrom: timestamp("updated_from", { withTimezone: true }),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});

/** Provider events already processed (webhook ids, local provider ids): a replay changes nothing. */
export const providerEvents = billing.table("provider_events", {
  id: text("id").primaryKey(),
  type: text("type").notNull(),
  receivedAt: timestamp("received_at", { withTimezone: true }).notNull().defaultNow(),
});

/** Usage per account per UTC month, counted from events. */
export const usage = billing.table(
  "usage",
  {
    accountId: text("account_id").notNull(),
    month: date("month").notNull(),
    opens: bigint("opens", { mode: "number" }).notNull().default(0),
    storageBytes: bigint("storage_bytes", { mode: "number" }).notNull().default(0),
    aiTokens: bigint("ai_tokens", { mode: "number" }).notNull().default(0),
    /** Of those, the tokens paid with the company's own key (the plan's companyAiTokensPerMonth counts these). */
    companyAiTokens: bigint("company_ai_tokens", { mode: "number" }).notNull().default(0),
    domains: integer("domains").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.month] })],
);

/** Hatch events already counted into `usage` (the consumer is at-least-once; this makes it exactly once). */
export const countedEvents = billing.table("counted_events", {
  eventId: text("event_id").primaryKey(),
  countedAt: timestamp("counted_at", { withTimezone: true }).notNull().defaultNow(),
});

/** One-off charges other services asked for, by idempotency key. */
export const charges = billing.table("charges", {
  idempotencyKey: text("idempotency_key").primaryKey(),
  accountId: text("account_id").notNull(),
  amountMinor: integer("amount_minor").notNull(),
  currency: text("currency").notNull(),
  description: text("description").notNull(),
  status: text("status").$type<"pending" | "charged" | "refused" | "failed" | "refunded">().notNull(),
  providerChargeId: text("provider_charge_id"),
  message: text("message"),
  /**
   * Tries at the provider: the provider's idempotency key is `<key>.<attempt>`. A retry after a refusal is a new
   * attempt (Stripe replays a key's first answer, a decline included); a charge stuck pending is retried under the same one.
   */
  attempts: integer("attempts").notNull().default(1),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});

/** Events of this service's changes (billing.account.plan_changed …), written in the same transaction. */
export const outbox = outboxTable(billing);
