import {
  AppLookupSchema,
  buildQuestion,
  buy_domain,
  CardCheckSchema,
  checkConfirm,
  isToolError,
  rpcMethods,
  ToolError,
  type AppLookup,
  type BuyDomainInput,
  type BuyDomainOutput,
  type CardCheck,
  type CallContext,
  type ConfirmClaims,
} from "@hatch/contracts";
import { bindTool, callRpc, consumeConfirm, type Logger, type ToolOutcome } from "@hatch/platform";
import { and, eq, lt, sql } from "drizzle-orm";
import { charge, purchaseKey, refund, resign } from "../bought/billing.ts";
import { domainEvent } from "../bought/events.ts";
import { money } from "../bought/money.ts";
import { edgeRecords } from "../bought/records.ts";
import { readRegistrant, REGISTRANT_REQUIRED, registrantFields } from "../bought/registrant.ts";
import type { DomainsContext } from "../context.ts";
import { boughtDomains, confirmUses, domainQuotes } from "../db/schema.ts";
import { enqueueJob } from "../jobs/queue.ts";
import { RegistrarUnavailable, type DomainOffer } from "../registrar/types.ts";

type Output = BuyDomainOutput;
type BoughtRow = typeof boughtDomains.$inferSelect;

/** The most one purchase may cost (billing's charge limit): $10,000. */
const MAX_PRICE_MINOR = 1_000_000;

class DomainTaken extends Error {}

function boughtResult(row: BoughtRow, text: string): { text: string; data: Output } {
  return {
    text,
    data: {
      status: "bought",
      domain: row.domain,
      stage: row.stage,
      firstYearPrice: money(row.firstYearMinor, row.currency),
      renewalPrice: money(row.renewalMinor, row.currency),
      renewsAt: row.renewsAt?.toISOString() ?? null,
    },
  };
}

/**
 * buy_domain: re-checks availability and price, asks the person to confirm the price and enter the owner's details
 * (fallback: the confirm link, as money is spent), then charges the card on file once per confirmation, records the
 * purchase with its event and queues the registration (jobs/domain-stages.ts).
 */
export function buyDomainTool(domains: DomainsContext) {
  return bindTool(buy_domain, async ({ ctx, input, answer, confirmation, log }): Promise<ToolOutcome<Output>> => {
    const domain = input.domain.toLowerCase();
    if (!ctx.account) throw new ToolError("forbidden", "This call has no account; sign in again. Nothing was bought.");
    if (!ctx.permissions.includes("buy_domains")) {
      throw new ToolError(
        "forbidden",
        "Buying a domain needs the buy_domains permission in this organization. Ask its owner or an admin to give it to you (org_member_update). Nothing was bought.",
      );
    }
    // A replayed confirmation finds its purchase: answered as it was, never charged again.
    if (confirmation) {
      const [replayed] = await domains.db
        .select()
        .from(boughtDomains)
        .where(eq(boughtDomains.chargeKey, purchaseKey(confirmation.id)));
      if (replayed)
        return boughtResult(
          replayed,
          `${replayed.domain} was already bought with this confirmation; nothing was charged again. Follow it with domain_status.`,
        );
    }
    const [existing] = await domains.db.select().from(boughtDomains).where(eq(boughtDomains.domain, domain));
    if (existing && existing.chargeStatus === "charged") {
      if (existing.accountId === ctx.account)
        return boughtResult(
          existing,
          `${domain} is already yours (bought through Hatch); it is at stage ${existing.stage}. Follow it with domain_status.`,
        );
      throw new ToolError("conflict", `${domain} is not available to buy. Pick another name with find_domain.`);
    }
    // No card, no questions: the person adds one first (a card removed since is still refused by the charge).
    const card = confirmation ? null : await cardCheck(domains, ctx, log);
    const app = input.address ? await lookupApp(domains, ctx, input.address) : null;
    const offer = await currentOffer(domains, domain);

    if (card && !card.cardOnFile) {
      const url = card.addCardUrl;
      const message = `No card is on file, so ${domain} (${money(offer.firstYearMinor).formatted} the first year) cannot be bought yet. The user adds a card at ${url ?? "the billing settings"}, then you call buy_domain again. Nothing was bought or charged.`;
      return {
        text: message,
        data: {
          ...offerData(domain, offer),
          status: "needs_user",
          userAction: { kind: "open_link", message, fields: [], url, expiresAt: null },
        },
      };
    }
    if (!confirmation) return { ask: await ask(domains, ctx, input, offer, null) };

    // The confirmation holds for the exact price it showed: a different price now asks again.
    const [quote] = await domains.db
      .select()
      .from(domainQuotes)
      .where(and(eq(domainQuotes.confirmId, confirmation.id), eq(domainQuotes.accountId, ctx.account)));
    if (
      !quote ||
      quote.domain !== domain ||
      quote.firstYearMinor !== offer.firstYearMinor ||
      quote.renewalMinor !== offer.renewalMinor
    ) {
      return { ask: await ask(domains, ctx, input, offer, quote ? money(quote.firstYearMinor).formatted : null) };
    }
    const registrant = readRegistrant(answer);
    if (!registrant.ok) {
      if (registrant.declined) {
        return {
          text: `${registrant.problem} Nothing was bought or charged.`,
          data: {
            ...offerData(domain, offer),
            status: "needs_user",
            userAction: {
              kind: "ask_user",
              message: `The user did not agree to buy ${domain}; nothing was bought.`,
              fields: [],
              url: null,
              expiresAt: null,
            },
          },
        };
      }
      throw new ToolError(
        "invalid_input",
        `${registrant.problem} Nothing was bought or charged; call buy_domain again to ask the user anew.`,
      );
    }

    const key = purchaseKey(confirmation.id);
    const signed = resign(ctx, domains.contextKey);
    const price = offer.firstYearMinor!;
    const paid = await charge(domains, signed, {
      accountId: ctx.account,
      amountMinor: price,
      description: `Domain ${domain}, first year`,
      key,
    });
    if (paid.status === "refused") {
      const message = `${paid.message ?? "The payment was refused."} Open ${paid.url ?? "the billing settings"}, then ask to buy ${domain} again. Nothing was bought or charged.`;
      return {
        text: message,
        data: {
          ...offerData(domain, offer),
          status: "needs_user",
          userAction: { kind: "open_link", message, fields: [], url: paid.url, expiresAt: null },
        },
      };
    }
    if (paid.status !== "charged")
      throw new ToolError("unavailable", `${paid.message ?? "The payment could not be made."} Nothing was bought.`);

    let row: BoughtRow;
    try {
      row = await domains.db.transaction(async (tx) => {
        await consumeConfirm(tx, confirmUses, confirmation);
        // A purchase whose registration failed and was refunded leaves the name free to buy again.
        await tx
          .delete(boughtDomains)
          .where(and(eq(boughtDomains.domain, domain), eq(boughtDomains.chargeStatus, "refunded")));
        const [inserted] = await tx
          .insert(boughtDomains)
          .values({
            domain,
            accountId: ctx.account!,
            accountKind: ctx.accountKind ?? "personal",
            boughtBy: ctx.sub,
            buyerEmail: ctx.email,
            buyerName: ctx.name,
            registrar: domains.registrar.name,
            currency: "USD",
            firstYearMinor: price,
            renewalMinor: offer.renewalMinor!,
            appId: app?.appId ?? null,
            address: app?.address ?? null,
            registrant: registrant.registrant,
            zoneRecords: edgeRecords(domains.config),
            chargeKey: key,
            chargeId: paid.chargeId,
            chargeStatus: "charged",
          })
          .onConflictDoNothing()
          .returning();
        if (!inserted) throw new DomainTaken();
        await domainEvent(
          tx,
          ctx,
          inserted,
          "bought",
          `${ctx.name} <${ctx.email}> bought ${domain} for ${money(price).formatted}`,
          { amountMinor: price, currency: "USD" },
        );
        await enqueueJob(tx, { kind: "domain.register", key: domain });
        return inserted;
      });
    } catch (error) {
      if (isToolError(error) && error.code === "conflict") {
        // The same confirmation, answered twice at once: the other call recorded the purchase (same charge key).
        const [winner] = await domains.db.select().from(boughtDomains).where(eq(boughtDomains.chargeKey, key));
        if (winner)
          return boughtResult(
            winner,
            `${winner.domain} was already bought with this confirmation; nothing was charged again.`,
          );
      }
      await refund(domains, signed, {
        accountId: ctx.account,
        key,
        reason: `Domain ${domain} could not be recorded`,
      }).catch((failure) => log.error("refund after a failed purchase record failed", { domain, key, error: failure }));
      if (error instanceof DomainTaken)
        throw new ToolError(
          "conflict",
          `${domain} was just bought by someone else; your charge was refunded. Pick another name with find_domain.`,
        );
      throw error;
    }
    domains.jobs.wake();
    log.info("domain bought", { domain, amountMinor: price });
    return boughtResult(
      row,
      `Bought ${domain} for ${money(price).formatted} (charged to the card on file; it renews at ${money(row.renewalMinor).formatted} a year). ` +
        `It is being registered now; DNS and the HTTPS certificate follow by themselves, usually within minutes. Follow it with domain_status.`,
    );
  });
}

/** Whether the account has a card, asked of billing; null while billing cannot say (the charge still decides). */
async function cardCheck(domains: DomainsContext, ctx: CallContext, log: Logger): Promise<CardCheck | null> {
  try {
    return await callRpc(
      domains.bus,
      "billing",
      rpcMethods.billing.card,
      { accountId: ctx.account! },
      CardCheckSchema,
      { ctx: resign(ctx, domains.contextKey), timeoutMs: 5_000 },
    );
  } catch (error) {
    log.warn("card check failed; the purchase asks on", { error });
    return null;
  }
}

async function lookupApp(domains: DomainsContext, ctx: CallContext, address: string): Promise<AppLookup> {
  return callRpc(domains.bus, "apps", rpcMethods.apps.appLookup, { address }, AppLookupSchema, {
    ctx: resign(ctx, domains.contextKey),
  });
}

/** The registrar's offer now; refuses what cannot be bought. */
async function currentOffer(
  domains: DomainsContext,
  domain: string,
): Promise<DomainOffer & { firstYearMinor: number; renewalMinor: number }> {
  let offer: DomainOffer | undefined;
  try {
    [offer] = await domains.registrar.check([domain]);
  } catch (error) {
    if (error instanceof RegistrarUnavailable)
      throw new ToolError(
        "unavailable",
        "The domain registrar is not answering right now. Try again in a minute; nothing was bought.",
      );
    throw error;
  }
  if (!offer?.available || offer.firstYearMinor === null || offer.renewalMinor === null) {
    throw new ToolError("conflict", `${domain} is not available to buy. Pick another name with find_domain.`);
  }
  if (offer.firstYearMinor > MAX_PRICE_MINOR) {
    throw new ToolError(
      "invalid_input",
      `${domain} costs ${money(offer.firstYearMinor).formatted}; Hatch sells domains up to ${money(MAX_PRICE_MINOR).formatted}. Pick another name with find_domain.`,
    );
  }
  return offer as DomainOffer & { firstYearMinor: number; renewalMinor: number };
}

function offerData(domain: string, offer: DomainOffer) {
  return {
    domain,
    stage: null,
    firstYearPrice: money(offer.firstYearMinor!),
    renewalPrice: money(offer.renewalMinor!),
    renewsAt: null,
  };
}

/** The question: the price and the owner's details. Its confirm token's id is bound to this domain and price. */
async function ask(
  domains: DomainsContext,
  ctx: CallContext,
  input: BuyDomainInput,
  offer: DomainOffer,
  before: string | null,
) {
  const first = money(offer.firstYearMinor!).formatted;
  const renewal = money(offer.renewalMinor!).formatted;
  const changed =
    before && before !== first
      ? `The price changed since you confirmed (it was ${before}). `
      : before
        ? "The price changed since you confirmed. "
        : "";
  const question = buildQuestion(
    domains.confirmKey,
    { sub: ctx.sub, tool: "buy_domain", input },
    {
      message:
        `${changed}Buy ${offer.domain}${offer.premium ? " (a premium name)" : ""} for ${first} now, renewed automatically at ${renewal} a year? ` +
        "The card on file is charged when you confirm. The owner's details are sent to the registrar as the domain's registrant.",
      properties: registrantFields(ctx, { first, renewal }),
      required: REGISTRANT_REQUIRED,
      fallback: "link",
      data: offerData(offer.domain, offer),
    },
  );
  const claims = checkConfirm(domains.confirmKey, question.confirm, { sub: ctx.sub, tool: "buy_domain", input });
  if (!claims.ok) throw new Error("a fresh confirm token did not check");
  await recordQuote(domains, ctx.account!, offer, claims.claims);
  return question;
}

async function recordQuote(
  domains: DomainsContext,
  accountId: string,
  offer: DomainOffer,
  claims: ConfirmClaims,
): Promise<void> {
  // Quotes of expired questions are of no use: swept as new ones come.
  await domains.db.delete(domainQuotes).where(lt(domainQuotes.expiresAt, sql`now() - interval '1 day'`));
  await domains.db.insert(domainQuotes).values({
    confirmId: claims.id,
    domain: offer.domain,
    accountId,
    currency: "USD",
    firstYearMinor: offer.firstYearMinor!,
    renewalMinor: offer.renewalMinor!,
    expiresAt: new Date(claims.exp * 1000),
  });
}
