import { bindTool } from "@hatch/platform";
import {
  billing as billingContract,
  effectivePlan,
  PLAN_TABLE,
  ToolError,
  type BillingOutput,
  plural,
} from "@hatch/contracts";
import { ensureAccount, linkFor, payerOf, seatsInUse, upgradePlan, usageOf, type LinkTarget } from "../account.ts";
import type { BillingContext } from "../context.ts";

// `billing`: plan, state, card on file, seats, this month's usage, and the page where the person acts when they must
// (or asked to, with manage or seats): one page per action, so adding a card never subscribes to a plan. Card details
// never pass here: the person types them on the provider's page (or, for ChatGPT, whose rules forbid selling there, on
// the settings page at our base URL, which leads on).

const price = (cents: number | null, perSeat: boolean) =>
  cents === null
    ? "by agreement"
    : cents === 0
      ? "$0"
      : `$${(cents / 100).toFixed(0)}/month${perSeat ? " per seat" : ""}`;

/** The plans an account of this kind may choose itself, and who each is for. */
const plansLine = (kind: "personal" | "company") =>
  Object.values(PLAN_TABLE)
    .filter((p) => p.selfServe && p.accounts.includes(kind))
    .map((p) => `${p.title} ${price(p.monthlyCents, p.perSeat)} (${p.forWhom})`)
    .join("; ");

export function billingTool(billing: BillingContext) {
  return bindTool(billingContract, async ({ ctx, input }) => {
    const payer = payerOf(ctx);
    if (input.seats !== undefined && payer.accountKind !== "company")
      throw new ToolError(
        "invalid_input",
        "Seats are for organizations (the Team plan); a personal account is one person. Leave seats out.",
      );
    const account = await ensureAccount(billing, payer);
    const [usage, used] = await Promise.all([usageOf(billing, account), seatsInUse(billing, payer)]);
    const onPlan = effectivePlan(account.plan, account.state);
    const perSeat = PLAN_TABLE[onPlan].perSeat;
    // Each link is made once (a Stripe link is a session at Stripe), and only when the answer carries it.
    const made = new Map<string, Promise<string>>();
    const link = (target: LinkTarget) => {
      const key = JSON.stringify(target);
      if (!made.has(key)) made.set(key, linkFor(billing, payer.ctx, account, target));
      return made.get(key)!;
    };
    const addCard: LinkTarget = account.cardOnFile ? { to: "portal" } : { to: "checkout" };
    const changePlan: LinkTarget =
      account.plan === "free"
        ? { to: "checkout", plan: upgradePlan(payer), seats: used ?? undefined }
        : { to: "portal" };
    const seatsTarget = (n: number): LinkTarget => ({ to: "seats", seats: n });

    let actionNeeded: string | null = null;
    let url: string | null = null;
    if (account.state === "past_due" || account.state === "suspended") {
      actionNeeded =
        account.state === "past_due" ? "fix the failed payment" : "pay the open invoice to restore paid features";
      url = await link({ to: "portal" });
    } else if (input.seats !== undefined) {
      url = await link(seatsTarget(input.seats));
    } else if (!account.cardOnFile) {
      actionNeeded = "add a card";
      url = await link(addCard);
    }
    let links: BillingOutput["links"];
    if (input.manage || input.seats !== undefined) {
      const company = payer.accountKind === "company";
      links = {
        addCard: await link(addCard),
        plan: await link(changePlan),
        seats: company ? await link(seatsTarget(input.seats ?? Math.max(1, used ?? account.seats))) : null,
      };
      url ??= links.plan;
    }
    // The apps and company AI token counts are for the settings page; the AI's answer stays as it was.
    const { apps: _apps, companyAiTokens: _companyAi, customDomains: _custom, ...usageShown } = usage;
    const data: BillingOutput = {
      plan: account.plan,
      state: account.state,
      cardOnFile: account.cardOnFile,
      usage: usageShown,
      actionNeeded,
      url,
      ...(links ? { links } : {}),
    };
    const seatLimit = PLAN_TABLE[onPlan].limits.seats;
    const seats =
      used === null
        ? ""
        : perSeat
          ? ` ${plural(account.seats, "seat")} paid, ${used} used (members and open invitations).`
          : ` ${used} of ${seatLimit === null ? "unlimited people" : plural(seatLimit, "person")} (members and open invitations).`;
    const head =
      `Plan ${PLAN_TABLE[account.plan].title} (${account.state}), ${account.cardOnFile ? "card on file" : "no card on file"}.${seats} ` +
      `This month (${usage.periodStart} until ${usage.periodEnd}): ${plural(usage.opens, "open")}, ${plural(usage.aiTokens, "AI token")}, ${plural(usage.domains, "domain")}, ${usage.amountSoFar.formatted} so far.`;
    return {
      text: `${head}${nextSteps(input.seats, account.seats, perSeat, actionNeeded, url, links)}${account.plan === "free" ? ` Plans: ${plansLine(payer.accountKind)}.` : ""}`,
      data,
    };
  });
}

/** What the person can do next, each page once. */
function nextSteps(
  seats: number | undefined,
  paid: number,
  perSeat: boolean,
  actionNeeded: string | null,
  url: string | null,
  links: BillingOutput["links"],
): string {
  const steps: string[] = [];
  if (actionNeeded && url) steps.push(`To ${actionNeeded}, open ${url}`);
  else if (seats !== undefined && url)
    steps.push(
      perSeat
        ? `To pay for ${seats} seats (now ${paid}), the user confirms at ${url}; nothing changes until then`
        : `To start Team with ${seats} seats, the user opens ${url} (card and seats are set there)`,
    );
  if (links) {
    const said = new Set(steps.length ? [url] : []);
    const all: [string, string | null][] = [
      ["add or change the card", links.addCard],
      ["change the plan", links.plan],
      ["change seats", seats === undefined ? links.seats : null],
    ];
    const pages = all.filter((entry): entry is [string, string] => typeof entry[1] === "string" && !said.has(entry[1]));
    // One page for everything (the portal of a paid plan; ChatGPT's settings page) is said once.
    if (pages.length > 1 && new Set(pages.map(([, page]) => page)).size === 1)
      steps.push(`Manage billing at ${pages[0]![1]}`);
    else for (const [what, page] of pages) steps.push(`To ${what}: ${page}`);
  }
  return steps.length ? ` ${steps.join(". ")}.` : "";
}
