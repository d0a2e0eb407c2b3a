import { z } from "zod";
import { BILLING_STATES, PLANS, type BillingState, type Plan } from "../tools/billing.ts";

// The plans and what each allows: one table that the billing tool, the developer reference, the billing settings page
// and every service that enforces a limit read. null = no limit. Money is in USD cents.

export interface PlanLimits {
  /** Apps in the account (all its members' apps together). */
  apps: number | null;
  /** App custom domains in the account. */
  customDomains: number | null;
  /** App data and files stored, all apps together. */
  storageBytes: number | null;
  /** AI tokens a month paid through the company's key (company accounts only; 0 = company keys cannot be used). */
  companyAiTokensPerMonth: number | null;
  /** People in the organization (members and pending invitations); personal accounts have one. */
  seats: number | null;
}

export type AccountKind = "personal" | "company";

export interface PlanInfo {
  plan: Plan;
  title: string;
  /** Who it is for, in a few words (the plan table and the billing tool say it). */
  forWhom: string;
  /** Price a month: for `team` per seat; null = priced by agreement (enterprise). */
  monthlyCents: number | null;
  perSeat: boolean;
  /** Whether a person can choose it on the checkout page (enterprise is arranged with sales). */
  selfServe: boolean;
  /** The accounts that may choose it: Pro is one person's, Team and Enterprise are organizations'. */
  accounts: readonly AccountKind[];
  limits: PlanLimits;
}

const GB = 1024 * 1024 * 1024;

export const PLAN_TABLE: Readonly<Record<Plan, PlanInfo>> = {
  free: {
    plan: "free",
    title: "Free",
    forWhom: "trying Hatch: your own apps, or an organization of up to 3 people",
    monthlyCents: 0,
    perSeat: false,
    selfServe: true,
    accounts: ["personal", "company"],
    limits: { apps: 3, customDomains: 0, storageBytes: 0.5 * GB, companyAiTokensPerMonth: 100_000, seats: 3 },
  },
  pro: {
    plan: "pro",
    title: "Pro",
    forWhom: "one person's apps, in a personal account",
    monthlyCents: 1200,
    perSeat: false,
    selfServe: true,
    accounts: ["personal"],
    limits: { apps: 50, customDomains: 10, storageBytes: 20 * GB, companyAiTokensPerMonth: 0, seats: 1 },
  },
  team: {
    plan: "team",
    title: "Team",
    forWhom: "organizations, paid per seat (a member or an open invitation)",
    monthlyCents: 2000,
    perSeat: true,
    selfServe: true,
    accounts: ["company"],
    limits: { apps: 500, customDomains: 50, storageBytes: 100 * GB, companyAiTokensPerMonth: 5_000_000, seats: null },
  },
  enterprise: {
    plan: "enterprise",
    title: "Enterprise",
    forWhom: "larger organizations, by agreement",
    monthlyCents: null,
    perSeat: true,
    selfServe: false,
    accounts: ["company"],
    limits: { apps: null, customDomains: null, storageBytes: null, companyAiTokensPerMonth: null, seats: null },
  },
};

/** The paid plans an account of this kind chooses itself: Pro for a person, Team for an organization. */
export function paidPlanFor(kind: AccountKind): "pro" | "team" {
  return kind === "company" ? "team" : "pro";
}

/** Most seats one checkout or change buys (Stripe's adjustable quantity needs a maximum). */
export const MAX_SEATS = 1000;

/** What a billing state means for paid features: past_due keeps them for now; suspended and canceled fall back to free. */
export function effectivePlan(plan: Plan, state: BillingState): Plan {
  return state === "suspended" || state === "canceled" ? "free" : plan;
}

/** The limits that hold for an account now; a team plan's seats are the seats paid for. */
export function limitsOf(plan: Plan, state: BillingState, seats: number): PlanLimits {
  const effective = effectivePlan(plan, state);
  const limits = PLAN_TABLE[effective].limits;
  return effective === "team" ? { ...limits, seats } : limits;
}

/** The limits a service checks, by name (for needs_payment messages). */
export const LIMIT_NAMES = ["apps", "customDomains", "storageBytes", "companyAiTokensPerMonth", "seats"] as const;
export type LimitName = (typeof LIMIT_NAMES)[number];

/** billing `entitlements` (rpc): what an account may do now. Any service may ask; it says nothing secret. */
export const EntitlementsInputSchema = z.object({ accountId: z.string().min(1) });
export const EntitlementsSchema = z.object({
  accountId: z.string(),
  plan: z.enum(PLANS),
  state: z.enum(BILLING_STATES),
  seats: z.number().int(),
  limits: z.object({
    apps: z.number().nullable(),
    customDomains: z.number().nullable(),
    storageBytes: z.number().nullable(),
    companyAiTokensPerMonth: z.number().nullable(),
    seats: z.number().nullable(),
  }),
  /** The billing settings page, where the person acts when a limit is reached. */
  settingsUrl: z.string(),
  /** AI tokens paid through the company's key this month so far (the companyAiTokensPerMonth limit counts these). */
  companyAiTokensThisMonth: z.number().int().optional(),
});
export type Entitlements = z.infer<typeof EntitlementsSchema>;

/** billing `charge` (rpc, the ctx of the person the charge is for): a one-off charge, e.g. a domain. */
export const ChargeInputSchema = z.object({
  accountId: z.string().min(1),
  amountMinor: z.number().int().min(50).max(1_000_000),
  currency: z.literal("USD"),
  description: z.string().min(1).max(200),
  /** The same key never charges twice; reused with another amount, currency or account it is refused. */
  idempotencyKey: z.string().regex(/^[A-Za-z0-9:_-]{8,128}$/),
});
export const ChargeResultSchema = z.object({
  status: z.enum(["charged", "refused", "failed"]),
  chargeId: z.string().nullable(),
  /** For refused and failed: what the person must do, in plain words. */
  message: z.string().nullable(),
  /** For refused: where the person adds a card or fixes the payment. */
  url: z.string().nullable(),
});
export type ChargeResult = z.infer<typeof ChargeResultSchema>;

/**
 * billing `card` (rpc, the ctx of a person acting as the account): whether a card is on file, before anything that
 * will charge it asks the person for more (buy_domain); without one, the page where they add it.
 */
export const CardCheckInputSchema = z.object({ accountId: z.string().min(1) });
export const CardCheckSchema = z.object({
  cardOnFile: z.boolean(),
  /** Without a card: where the person adds one (the settings page for ChatGPT); null with a card. */
  addCardUrl: z.string().nullable(),
});
export type CardCheck = z.infer<typeof CardCheckSchema>;

/** billing `refund` (rpc, the ctx of the person the charge was for, or a service's system call): gives a charge back. */
export const RefundInputSchema = z.object({
  accountId: z.string().min(1),
  /** The charge's idempotency key. */
  idempotencyKey: z.string().regex(/^[A-Za-z0-9:_-]{8,128}$/),
  reason: z.string().min(1).max(200),
});
export const RefundResultSchema = z.object({
  /** refunded = given back now or before; not_charged = nothing was charged under that key (nothing to give back). */
  status: z.enum(["refunded", "not_charged"]),
});
export type RefundResult = z.infer<typeof RefundResultSchema>;

/**
 * billing `webhook` (rpc from the gateway): a payment provider's event the gateway verified (Stripe's signature) and
 * forwards as received. Billing processes each event id once.
 */
export const ProviderWebhookInputSchema = z.object({
  provider: z.literal("stripe"),
  event: z.record(z.string(), z.unknown()),
});
export const ProviderWebhookResultSchema = z.object({ handled: z.boolean(), duplicate: z.boolean() });

/** apps `storage` (rpc, from billing): bytes of documents and files an account's apps hold now. */
export const AccountStorageInputSchema = z.object({ accountId: z.string().min(1) });
/** domains `custom.count` (rpc, from billing): the custom domains an account's apps are on. */
export const CustomDomainsCountSchema = z.object({ custom: z.number().int().min(0) });

export const AccountStorageSchema = z.object({
  bytes: z.number().int().min(0),
  /** The account's apps (the plan's apps limit counts them); absent from copies that predate it. */
  apps: z.number().int().min(0).optional(),
});

const count = (n: number | null, unit = "") => (n === null ? "no limit" : `${n.toLocaleString("en-US")}${unit}`);
const size = (bytes: number | null) =>
  bytes === null ? "no limit" : bytes >= GB ? `${bytes / GB} GB` : `${Math.round(bytes / 1024 / 1024)} MB`;
const price = (info: PlanInfo) =>
  info.monthlyCents === null
    ? "by agreement"
    : info.monthlyCents === 0
      ? "free"
      : `$${(info.monthlyCents / 100).toFixed(0)} a month${info.perSeat ? " per seat" : ""}`;

/** The plan table in Markdown: the developer reference prints it, and the billing tool points to it. */
export function planTableMarkdown(): string {
  const rows = Object.values(PLAN_TABLE).map((info) => {
    const l = info.limits;
    const seats = info.perSeat ? "the seats paid for" : info.accounts.includes("company") ? count(l.seats) : "1 (you)";
    return `| ${info.title} | ${price(info)} | ${count(l.apps)} | ${count(l.customDomains)} | ${size(l.storageBytes)} | ${info.accounts.includes("company") ? count(l.companyAiTokensPerMonth) : "-"} | ${seats} | ${info.forWhom} |`;
  });
  return [
    "| plan | price | apps | custom domains | data and files | AI tokens a month through the company's key | people | for |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows,
  ].join("\n");
}
