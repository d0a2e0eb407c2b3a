import {
  BillingLinkInputSchema,
  BillingSettingsInputSchema,
  bindRpc,
  LocalActInputSchema,
  randomId,
  ToolError,
  type BillingSettings,
} from "@hatch/shared";
import { ensureAccount, linkFor, payerOf, usageOf, type AccountRow } from "../account.ts";
import type { BillingContext } from "../context.ts";
import { applyBillingUpdate } from "../provider/apply.ts";

// The gateway's billing pages: /dashboard/billing (settings, buttons to checkout or portal) and the local provider's
// checkout and portal. Same checks as the tool, on the person's own ctx signed for the page.

function settingsOf(
  account: AccountRow,
  kind: "personal" | "company",
  usage: BillingSettings["usage"],
): BillingSettings {
  return {
    accountId: account.accountId,
    accountKind: kind,
    provider: account.provider,
    plan: account.plan,
    state: account.state,
    seats: account.seats,
    cardOnFile: account.cardOnFile,
    usage,
  };
}

export function settingsRpc(billing: BillingContext) {
  return bindRpc(BillingSettingsInputSchema, async ({ ctx }): Promise<BillingSettings> => {
    const payer = payerOf(ctx);
    const account = await ensureAccount(billing, payer);
    return settingsOf(account, payer.accountKind, await usageOf(billing, account));
  });
}

export function settingsLinkRpc(billing: BillingContext) {
  return bindRpc(BillingLinkInputSchema, async ({ ctx, input }) => {
    const payer = payerOf(ctx);
    if (input.plan === "team" && payer.accountKind !== "company")
      throw new ToolError("invalid_input", "The Team plan is for companies; choose Pro.");
    const account = await ensureAccount(billing, payer);
    // The page is the settings page itself, so a ChatGPT ctx never reaches here; the website's ctx gets the provider.
    return { url: await linkFor(billing, payer.ctx, account, input.to, input.plan) };
  });
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
      if ("plan" in input && input.plan === "team" && payer.accountKind !== "company")
        throw new ToolError("invalid_input", "The Team plan is for companies; choose Pro.");
      const at = new Date();
      const base = {
        id: `evt_local_${randomId(16)}`,
        type: `local.${input.action}`,
        customerId: account.customerId,
        at,
      };
      const subscription = (plan: "free" | "pro" | "team") => ({
        id: plan === "free" ? null : (account.subscriptionId ?? `sub_local_${randomId(12)}`),
        plan,
        state: "active" as const,
        seats: plan === "team" ? Math.max(1, account.seats) : 1,
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
        await applyBillingUpdate(billing.db, billing.logger, {
          ...base,
          cardOnFile: true,
          ...(input.plan !== account.plan ? { subscription: subscription(input.plan) } : {}),
        });
        return {
          ok: true,
          message: input.plan === account.plan ? "Card saved." : `Card saved; you are on ${input.plan} now.`,
        };
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
