import { bindTool, billing as billingContract, PLAN_TABLE, type BillingOutput } from "@hatch/shared";
import { ensureAccount, linkFor, payerOf, upgradePlan, usageOf } from "../account.ts";
import type { BillingContext } from "../context.ts";

// `billing`: plan, state, card on file, this month's usage, and the page where the person acts when they must (or
// asked to, with manage). Card details never pass here: the person types them on the provider's page (or, for
// ChatGPT, whose rules forbid selling there, on the settings page at our base URL, which leads on).

const plansLine = Object.values(PLAN_TABLE)
  .filter((p) => p.selfServe)
  .map((p) => `${p.title} $${((p.monthlyCents ?? 0) / 100).toFixed(0)}/month${p.perSeat ? " per seat" : ""}`)
  .join(", ");

export function billingTool(billing: BillingContext) {
  return bindTool(billingContract, async ({ ctx, input }) => {
    const payer = payerOf(ctx);
    const account = await ensureAccount(billing, payer);
    const usage = await usageOf(billing, account);
    let actionNeeded: string | null = null;
    let url: string | null = null;
    if (account.state === "past_due" || account.state === "suspended") {
      actionNeeded =
        account.state === "past_due" ? "fix the failed payment" : "pay the open invoice to restore paid features";
      url = await linkFor(billing, payer.ctx, account, "portal");
    } else if (!account.cardOnFile) {
      actionNeeded = "add a card";
      url = await linkFor(
        billing,
        payer.ctx,
        account,
        "checkout",
        input.manage && account.plan === "free" ? upgradePlan(payer) : undefined,
      );
    } else if (input.manage) {
      url =
        account.plan === "free"
          ? await linkFor(billing, payer.ctx, account, "checkout", upgradePlan(payer))
          : await linkFor(billing, payer.ctx, account, "portal");
    }
    const data: BillingOutput = {
      plan: account.plan,
      state: account.state,
      cardOnFile: account.cardOnFile,
      usage,
      actionNeeded,
      url,
    };
    const head =
      `Plan ${PLAN_TABLE[account.plan].title} (${account.state}), ${account.cardOnFile ? "card on file" : "no card on file"}. ` +
      `This month: ${usage.opens} opens, ${usage.aiTokens} AI tokens, ${usage.domains} domains, ${usage.amountSoFar.formatted} so far.`;
    const next = url ? (actionNeeded ? ` To ${actionNeeded}, open ${url}` : ` Manage billing at ${url}`) : "";
    return { text: `${head}${next}${account.plan === "free" ? ` Plans: ${plansLine}.` : ""}`, data };
  });
}
