import {
  AccountStorageSchema,
  CustomDomainsCountSchema,
  effectivePlan,
  paidPlanFor,
  PLAN_TABLE,
  rpcMethods,
  SeatsUsedSchema,
  ToolError,
  type CallContext,
  type Money,
} from "@hatch/contracts";
import { callRpc } from "@hatch/platform";
import { and, eq, gte, lt, sql } from "drizzle-orm";
import { settingsUrl, type BillingContext } from "./context.ts";
import { accounts, charges, usage } from "./db/schema.ts";

// Whose billing a caller may see and change, the account row (created with its provider customer on first use) and
// this month's usage. Shared by the `billing` tool, the settings pages' rpc and `charge`.

export type AccountRow = typeof accounts.$inferSelect;

export interface Payer {
  accountId: string;
  accountKind: "personal" | "company";
}

/** Personal billing is its owner's; a company's is for its owner, admins and members with the `billing` permission. */
export function payerOf(ctx: CallContext | null): Payer & { ctx: CallContext } {
  if (!ctx) throw new ToolError("forbidden", "Sign in to see billing.");
  if (!ctx.account || !ctx.accountKind)
    throw new ToolError("unavailable", "Your account is not resolved yet; try again in a moment.");
  const allowed = ctx.role === "owner" || ctx.role === "admin" || ctx.permissions.includes("billing");
  if (!allowed) {
    throw new ToolError(
      "forbidden",
      ctx.accountKind === "company"
        ? "Company billing is for the company's owner, admins and members with the billing permission; ask one of them."
        : "Only the account's owner sees its billing.",
    );
  }
  return { accountId: ctx.account, accountKind: ctx.accountKind, ctx };
}

/** The account's row; the first time, its customer at the provider is created (a lost race keeps the winner's). */
export async function ensureAccount(billing: BillingContext, payer: Payer & { ctx: CallContext }): Promise<AccountRow> {
  const [row] = await billing.db.select().from(accounts).where(eq(accounts.accountId, payer.accountId));
  if (row) return row;
  const customerId = await billing.provider.createCustomer({
    accountId: payer.accountId,
    email: payer.ctx.email,
    name: payer.ctx.name,
  });
  await billing.db
    .insert(accounts)
    .values({ accountId: payer.accountId, provider: billing.provider.kind, customerId })
    .onConflictDoNothing();
  const [created] = await billing.db.select().from(accounts).where(eq(accounts.accountId, payer.accountId));
  if (!created) throw new Error("billing account row missing after insert");
  return created;
}

export function monthBounds(now = new Date()): { start: Date; end: Date } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { start, end };
}

const isoDate = (d: Date) => d.toISOString().slice(0, 10);

export function money(amountMinor: number): Money {
  return { amountMinor, currency: "USD", formatted: `$${(amountMinor / 100).toFixed(2)}` };
}

/** This month's usage and what it costs so far: the plan's price plus the one-off charges made this month. */
export async function usageOf(billing: BillingContext, account: AccountRow) {
  const { start, end } = monthBounds();
  const [counted] = await billing.db
    .select()
    .from(usage)
    .where(and(eq(usage.accountId, account.accountId), eq(usage.month, isoDate(start))));
  const [charged] = await billing.db
    .select({ total: sql<string | null>`sum(${charges.amountMinor})` })
    .from(charges)
    .where(
      and(
        eq(charges.accountId, account.accountId),
        eq(charges.status, "charged"),
        gte(charges.createdAt, start),
        lt(charges.createdAt, end),
      ),
    );
  const info = PLAN_TABLE[effectivePlan(account.plan, account.state)];
  const planCents = (info.monthlyCents ?? 0) * (info.perSeat ? account.seats : 1);
  const [stored, custom] = await Promise.all([
    storageOf(billing, account.accountId),
    customDomainsOf(billing, account.accountId),
  ]);
  return {
    periodStart: isoDate(start),
    periodEnd: isoDate(end),
    opens: counted?.opens ?? 0,
    storageBytes: stored.bytes,
    aiTokens: counted?.aiTokens ?? 0,
    domains: counted?.domains ?? 0,
    amountSoFar: money(planCents + Number(charged?.total ?? 0)),
    ...(stored.apps === undefined ? {} : { apps: stored.apps }),
    ...(custom === null ? {} : { customDomains: custom }),
    companyAiTokens: counted?.companyAiTokens ?? 0,
  };
}

/**
 * What the account's apps store now and how many there are, asked of apps; 0 bytes and no count while apps cannot
 * answer (the rest of the answer still helps).
 */
async function storageOf(billing: BillingContext, accountId: string): Promise<{ bytes: number; apps?: number }> {
  try {
    return await callRpc(billing.bus, "apps", rpcMethods.apps.storage, { accountId }, AccountStorageSchema, {
      timeoutMs: 2_000,
    });
  } catch (error) {
    billing.logger.warn("storage of an account unreadable; shown as 0", { accountId, error });
    return { bytes: 0 };
  }
}

/** The custom domains the account's apps are on, asked of domains; null while domains cannot answer. */
async function customDomainsOf(billing: BillingContext, accountId: string): Promise<number | null> {
  try {
    const answer = await callRpc(
      billing.bus,
      "domains",
      rpcMethods.domains.customCount,
      { accountId },
      CustomDomainsCountSchema,
      { timeoutMs: 2_000 },
    );
    return answer.custom;
  } catch (error) {
    billing.logger.warn("custom domains of an account unreadable; left out", { accountId, error });
    return null;
  }
}

/** AI tokens paid with the company's key this month (from apps.ai.used), as the plan's limit counts them. */
export async function companyAiTokensThisMonth(
  billing: Pick<BillingContext, "db">,
  accountId: string,
): Promise<number> {
  const [row] = await billing.db
    .select({ tokens: usage.companyAiTokens })
    .from(usage)
    .where(and(eq(usage.accountId, accountId), eq(usage.month, isoDate(monthBounds().start))));
  return row?.tokens ?? 0;
}

/** The plan a checkout offers an account that has none yet: Pro for a person, Team for a company. */
export const upgradePlan = (payer: Payer): "pro" | "team" => paidPlanFor(payer.accountKind);

/**
 * An organization's seats in use: members and open invitations, asked of orgs (a Team checkout fills them in). While
 * orgs cannot answer, null: the caller falls back to the seats paid for.
 */
export async function seatsInUse(billing: BillingContext, payer: Payer): Promise<number | null> {
  if (payer.accountKind !== "company") return null;
  try {
    const used = await callRpc(
      billing.bus,
      "orgs",
      rpcMethods.orgs.seatsUsed,
      { accountId: payer.accountId },
      SeatsUsedSchema,
      { timeoutMs: 2_000 },
    );
    return used.members + used.invitations;
  } catch (error) {
    billing.logger.warn("seats in use unreadable; the seats paid for are shown", { accountId: payer.accountId, error });
    return null;
  }
}

export type LinkTarget =
  | { to: "checkout"; plan?: "pro" | "team"; seats?: number }
  | { to: "portal" }
  | { to: "seats"; seats: number };

/** Where a button or an answer sends the person; ChatGPT clients only ever get the settings page. */
export async function linkFor(
  billing: BillingContext,
  ctx: CallContext,
  account: AccountRow,
  target: LinkTarget,
): Promise<string> {
  const back = settingsUrl(billing.config);
  if (ctx.client.kind === "chatgpt") return target.to === "seats" ? `${back}?seats=${target.seats}` : back;
  if (target.to === "portal") return billing.provider.portalUrl(account.customerId, back);
  const paidPerSeat = PLAN_TABLE[effectivePlan(account.plan, account.state)].perSeat;
  if (target.to === "seats") {
    // On Team the subscription's quantity changes; from Free, Team starts with those seats.
    if (paidPerSeat && account.subscriptionId)
      return billing.provider.seatsUrl({
        customerId: account.customerId,
        subscriptionId: account.subscriptionId,
        seats: target.seats,
        returnUrl: back,
      });
    return linkFor(billing, ctx, account, { to: "checkout", plan: "team", seats: target.seats });
  }
  return billing.provider.checkoutUrl({
    customerId: account.customerId,
    mode: target.plan ? "subscription" : "setup",
    plan: target.plan,
    seats: target.plan === "team" ? Math.max(1, target.seats ?? account.seats) : undefined,
    successUrl: `${back}?done=1`,
    cancelUrl: back,
  });
}
