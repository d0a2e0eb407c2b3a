import {
  BillingLinkInputSchema,
  BillingSettingsInputSchema,
  LocalActInputSchema,
  randomId,
  limitsOf,
  ToolError,
  type BillingSettings,
} from "@hatch/contracts";
import { bindRpc } from "@hatch/platform";
import { ensureAccount, linkFor, payerOf, seatsInUse, usageOf, type AccountRow, type LinkTarget } from "../account.ts";
import type { BillingContext } from "../context.ts";
import { applyBillingUpdate } from "../provider/apply.ts";

// The gateway's billing pages: /dashboard/billing (settings, buttons to checkout or portal) and the local provider's
// checkout and portal. Same checks as the tool, on the person's own ctx signed for the page.

function settingsOf(
  account: AccountRow,
  kind: "personal" | "company",
  usage: BillingSettings["usage"],
  seatsUsed: number | null,
): BillingSettings {
  return {
    accountId: account.accountId,
    accountKind: kind,
    provider: account.provider,
    plan: account.plan,
    state: account.state,
    seats: account.seats,
    seatsUsed,
    cardOnFile: account.cardOnFile,
    usage,
    limits: limitsOf(account.plan, account.state, account.seats),
    renewsAt:
      account.plan !== "free" && account.currentPeriodEnd ? account.currentPeriodEnd.toISOString().slice(0, 10) : null,
  };
}

export function settingsRpc(billing: BillingContext) {
  return bindRpc(BillingSettingsInputSchema, async ({ ctx }): Promise<BillingSettings> => {
    const payer = payerOf(ctx);
    const account = await ensureAccount(billing, payer);
    const [usage, used] = await Promise.all([usageOf(billing, account), seatsInUse(billing, payer)]);
    return settingsOf(account, payer.accountKind, usage, used);
  });
}

export function settingsLinkRpc(billing: BillingContext) {
  return bindRpc(BillingLinkInputSchema, async ({ ctx, input }) => {
    const payer = payerOf(ctx);
    refuseOtherKind(input.plan, payer.accountKind);
    if (input.to === "seats" && payer.accountKind !== "company")
      throw new ToolError("invalid_input", "Seats are for organizations (the Team plan).");
    const account = await ensureAccount(billing, payer);
    // The page is the settings page itself, so a ChatGPT ctx never reaches here; the website's ctx gets the provider.
    const target: LinkTarget =
      input.to === "seats"
        ? { to: "seats", seats: input.seats ?? Math.max(1, (await seatsInUse(billing, payer)) ?? account.seats) }
        : input.to === "portal"
          ? { to: "portal" }
          : {
              to: "checkout",
              plan: input.plan,
              seats:
                input.plan === "team" ? (input.seats ?? (await seatsInUse(billing, payer)) ?? undefined) : undefined,
            };
    return { url: await linkFor(billing, payer.ctx, account, target) };
  });
}

/** Pro is one person's plan, Team an organization's: the other kind is refused with the plan it should choose. */
function refuseOtherKind(plan: string | undefined, kind: "personal" | "company"): void {
  if (plan === "team" && kind !== "company")
    throw new ToolError("invalid_input", "The Team plan is for organizations; choose Pro.");
  if (plan === "pro" && kind === "company")
    throw new ToolError("invalid_input", "The Pro plan is for one person's account; organizations choose Team.");
}

/** `local.act`: the local checkout and portal pages' outcome, applied as the provider's own updates. */
export function localActRpc(billing: BillingContext) {
  return bindRpc(
    LocalActInputSchema,
    async ({ ctx, input, log }) => {
      if (billing.provider.kind !== "local")
        throw new ToolError(
          "unavailable",
          "This Hatch server takes payments through Stripe; use the billing settings page.",
        );
      const payer = payerOf(ctx);
      if (payer.ctx.scope === "read")
        throw new ToolError("forbidden", "This session is read-only; sign in again to change billing.");
      const account = await ensureAccount(billing, payer);
      if ("plan" in input) refuseOtherKind(input.plan, payer.accountKind);
      if (input.action === "seats" && (payer.accountKind !== "company" || account.plan !== "team"))
        return { ok: false, message: "Seats are changed on the Team plan; choose Team first." };
      const at = new Date();
      const base = {
        id: `evt_local_${randomId(16)}`,
        type: `local.${input.action}`,
        customerId: account.customerId,
        at,
      };
      const subscription = (plan: "free" | "pro" | "team", seats = account.seats) => ({
        id: plan === "free" ? null : (account.subscriptionId ?? `sub_local_${randomId(12)}`),
        plan,
        state: "active" as const,
        seats: plan === "team" ? Math.max(1, seats) : 1,
        currentPeriodEnd:
          plan === "free" ? null : new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, at.getUTCDate())),
      });
      if (input.action === "checkout") {
        if (input.card === "declined") {
          log.info("local checkout declined", { account: account.accountId });
          return {
            ok: false,
            message: "The card was declined. On this local server only the test card 4242 4242 4242 4242 works.",
          };
        }
        const seats = input.plan === "team" ? (input.seats ?? account.seats) : 1;
        const changes = input.plan !== account.plan || (input.plan === "team" && seats !== account.seats);
        await applyBillingUpdate(billing.db, billing.logger, {
          ...base,
          cardOnFile: true,
          ...(changes ? { subscription: subscription(input.plan, seats) } : {}),
        });
        return {
          ok: true,
          message: !changes
            ? "Card saved."
            : `Card saved; you are on ${input.plan}${input.plan === "team" ? ` with ${seats} seat${seats === 1 ? "" : "s"}` : ""} now.`,
        };
      }
      if (input.action === "seats") {
        await applyBillingUpdate(billing.db, billing.logger, {
          ...base,
          subscription: subscription("team", input.seats),
        });
        return { ok: true, message: `You pay for ${input.seats} seat${input.seats === 1 ? "" : "s"} now.` };
      }
      if (input.action === "plan") {
        if (input.plan !== "free" && !account.cardOnFile) return { ok: false, message: "Add a card first (checkout)." };
        await applyBillingUpdate(billing.db, billing.logger, { ...base, subscription: subscription(input.plan) });
        return {
          ok: true,
          message:
            input.plan === "free" ? "The paid plan is canceled; you are on free." : `You are on ${input.plan} now.`,
        };
      }
      if (account.plan !== "free")
        return { ok: false, message: "A paid plan needs a card: cancel the plan first, or add another card." };
      await applyBillingUpdate(billing.db, billing.logger, { ...base, cardOnFile: false });
      return { ok: true, message: "Card removed." };
    },
    { writes: true },
  );
}
