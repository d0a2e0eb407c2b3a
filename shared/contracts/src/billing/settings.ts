import { z } from "zod";
import { MoneySchema } from "../tools/common.ts";
import { BILLING_STATES, PLANS } from "../tools/billing.ts";
import { MAX_SEATS } from "./plans.ts";

// What the gateway's billing pages (/dashboard/billing and the local checkout and portal) ask billing over the bus.
// The ctx is always the person's own, signed for the page; billing checks it exactly as for the `billing` tool.
// No card number ever crosses here: the local checkout page sends only whether the test card was typed.

export const BillingSettingsInputSchema = z.object({}).strict();
export const BillingSettingsSchema = z.object({
  accountId: z.string(),
  accountKind: z.enum(["personal", "company"]),
  provider: z.enum(["stripe", "local"]),
  plan: z.enum(PLANS),
  state: z.enum(BILLING_STATES),
  seats: z.number().int(),
  /** An organization's members and open invitations (what Team's seats must cover); null for a personal account. */
  seatsUsed: z.number().int().nullable(),
  cardOnFile: z.boolean(),
  usage: z.object({
    periodStart: z.string(),
    periodEnd: z.string(),
    opens: z.number().int(),
    storageBytes: z.number().int(),
    aiTokens: z.number().int(),
    domains: z.number().int(),
    amountSoFar: MoneySchema,
    /** Apps in the account now (the apps limit); absent when apps could not say, or from older copies. */
    apps: z.number().int().optional(),
    /** Custom domains the account's apps are on (the custom domains limit); absent when domains could not say. */
    customDomains: z.number().int().optional(),
    /** AI tokens paid with the company's key this month (the company AI tokens limit); organizations only. */
    companyAiTokens: z.number().int().optional(),
  }),
  /** The limits that hold now (the plan's, Team's seats as paid); absent from older copies. */
  limits: z
    .object({
      apps: z.number().nullable(),
      customDomains: z.number().nullable(),
      storageBytes: z.number().nullable(),
      companyAiTokensPerMonth: z.number().nullable(),
      seats: z.number().nullable(),
    })
    .optional(),
  /** When the paid plan renews (ISO date), when known. */
  renewsAt: z.string().nullable().optional(),
});
export type BillingSettings = z.infer<typeof BillingSettingsSchema>;

/** `settings.link`: the provider page a settings button leads to (created on click, not on every page view). */
export const BillingLinkInputSchema = z.object({
  /** checkout = add a card (with a plan: start it); portal = manage; seats = pay for this many seats (Team). */
  to: z.enum(["checkout", "portal", "seats"]),
  plan: z.enum(["pro", "team"]).optional(),
  seats: z.number().int().min(1).max(MAX_SEATS).optional(),
});
export const BillingLinkSchema = z.object({ url: z.string() });

/**
 * `local.act`: what the person did on the local provider's checkout or portal page. `card` is the page's verdict on
 * the number typed ("ok" only for the test card 4242 4242 4242 4242), never the number.
 */
export const LocalActInputSchema = z.discriminatedUnion("action", [
  z.object({
    action: z.literal("checkout"),
    card: z.enum(["ok", "declined"]),
    plan: z.enum(["free", "pro", "team"]),
    /** For team: the seats chosen on the page. */
    seats: z.number().int().min(1).max(MAX_SEATS).optional(),
  }),
  z.object({ action: z.literal("plan"), plan: z.enum(["free", "pro", "team"]) }),
  z.object({ action: z.literal("seats"), seats: z.number().int().min(1).max(MAX_SEATS) }),
  z.object({ action: z.literal("remove_card") }),
]);
export type LocalActInput = z.infer<typeof LocalActInputSchema>;
export const LocalActResultSchema = z.object({ ok: z.boolean(), message: z.string() });

/**
 * `receipts`: the account's invoices and receipts from the payment provider, newest first, each with its lines (a
 * plan's seats, a domain purchase). Same who-may-see as `settings`.
 */
export const ReceiptsSchema = z.object({
  receipts: z.array(
    z.object({
      id: z.string(),
      /** The provider's invoice number, when it has one. */
      number: z.string().nullable(),
      /** ISO date. */
      date: z.string(),
      status: z.enum(["paid", "open", "void", "uncollectible", "draft", "refunded"]),
      total: MoneySchema,
      lines: z.array(z.object({ description: z.string(), quantity: z.number().int().nullable(), amount: MoneySchema })),
      /** The provider's own page of this invoice (Stripe's hosted invoice), when there is one. */
      url: z.string().nullable(),
    }),
  ),
});
export type Receipts = z.infer<typeof ReceiptsSchema>;
