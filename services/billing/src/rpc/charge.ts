import { bindRpc } from "@hatch/platform";
import {
  CardCheckInputSchema,
  ChargeInputSchema,
  ToolError,
  type CardCheck,
  type ChargeResult,
} from "@hatch/contracts";
import { and, eq, inArray, sql } from "drizzle-orm";
import { ensureAccount, linkFor } from "../account.ts";
import type { BillingContext } from "../context.ts";
import { charges } from "../db/schema.ts";

// `charge`: a one-off charge another service asks for with the person's ctx (domains, buying a domain). The key is
// recorded before the provider is called, so the same key never charges twice; a refused charge may be retried
// with the same key once the person has added a card.

/** A charge pending longer than this was left by a call that died: the next ask with its key resumes it. */
const STALE_PENDING_MS = 2 * 60_000;

export function chargeRpc(billing: BillingContext) {
  return bindRpc(
    ChargeInputSchema,
    async ({ ctx, input, log }): Promise<ChargeResult> => {
      if (!ctx || ctx.account !== input.accountId)
        throw new ToolError("forbidden", "A charge needs the context of a person acting as that account.");
      const fields = {
        accountId: input.accountId,
        amountMinor: input.amountMinor,
        currency: input.currency,
        description: input.description,
        status: "pending" as const,
      };
      let attempt = 1;
      const claimed = await billing.db
        .insert(charges)
        .values({ idempotencyKey: input.idempotencyKey, ...fields })
        .onConflictDoNothing()
        .returning();
      if (claimed.length === 0) {
        const [known] = await billing.db.select().from(charges).where(eq(charges.idempotencyKey, input.idempotencyKey));
        if (!known) throw new Error("charge row vanished");
        if (
          known.accountId !== input.accountId ||
          known.amountMinor !== input.amountMinor ||
          known.currency !== input.currency
        ) {
          throw new ToolError(
            "conflict",
            "This idempotency key was used for another charge (account, amount or currency differ); use a new key.",
          );
        }
        if (known.status === "charged" || known.status === "refunded")
          return { status: "charged", chargeId: known.providerChargeId, message: null, url: null };
        if (known.status === "pending") {
          // Being made by another call, or left behind by a crash: after a while, asked again under the same provider
          // key, which answers what it did then (or does it now) and never charges twice.
          if (Date.now() - known.updatedAt.getTime() < STALE_PENDING_MS)
            return {
              status: "failed",
              chargeId: null,
              message: "This charge is still being made; ask again in a moment.",
              url: null,
            };
          const resumed = await billing.db
            .update(charges)
            .set({ updatedAt: new Date() })
            .where(
              and(
                eq(charges.idempotencyKey, input.idempotencyKey),
                eq(charges.status, "pending"),
                eq(charges.updatedAt, known.updatedAt),
              ),
            )
            .returning();
          if (resumed.length === 0)
            return {
              status: "failed",
              chargeId: null,
              message: "This charge is still being made; ask again in a moment.",
              url: null,
            };
          attempt = known.attempts;
        } else {
          // refused or failed before: a new attempt (the person may have added a card since).
          const retried = await billing.db
            .update(charges)
            .set({ status: "pending", attempts: sql`${charges.attempts} + 1`, updatedAt: new Date() })
            .where(
              and(eq(charges.idempotencyKey, input.idempotencyKey), inArray(charges.status, ["refused", "failed"])),
            )
            .returning({ attempts: charges.attempts });
          if (retried.length === 0)
            return {
              status: "failed",
              chargeId: null,
              message: "This charge is still being made; ask again in a moment.",
              url: null,
            };
          attempt = retried[0]!.attempts;
        }
      }
      const account = await ensureAccount(billing, {
        accountId: input.accountId,
        accountKind: ctx.accountKind ?? "personal",
        ctx,
      });
      const outcome = await billing.provider.charge({
        customerId: account.customerId,
        amountMinor: input.amountMinor,
        currency: input.currency,
        description: input.description,
        idempotencyKey: `${input.idempotencyKey}.${attempt}`,
      });
      let result: ChargeResult;
      if (outcome.status === "charged")
        result = { status: "charged", chargeId: outcome.chargeId, message: null, url: null };
      else if (outcome.status === "refused") {
        const url = await linkFor(billing, ctx, account, { to: outcome.reason === "no_card" ? "checkout" : "portal" });
        const message =
          outcome.reason === "no_card"
            ? "No card is on file: add one, then try again."
            : "The card was declined: update it, then try again.";
        result = { status: "refused", chargeId: null, message, url };
      } else
        result = {
          status: "failed",
          chargeId: null,
          message: "The payment provider could not make the charge; try again later.",
          url: null,
        };
      await billing.db
        .update(charges)
        .set({
          status: result.status,
          providerChargeId: result.chargeId,
          message: result.message,
          updatedAt: new Date(),
        })
        .where(eq(charges.idempotencyKey, input.idempotencyKey));
      log.info("charge", { account: input.accountId, status: result.status, amountMinor: input.amountMinor });
      return result;
    },
    { writes: true },
  );
}

/**
 * `card`: whether the account has a card to charge, asked before a purchase asks the person anything more. The row's
 * flag (kept by the provider's updates); a Stripe account without it is asked of Stripe, as a webhook may be late.
 */
export function cardCheckRpc(billing: BillingContext) {
  return bindRpc(CardCheckInputSchema, async ({ ctx, input }): Promise<CardCheck> => {
    if (!ctx || ctx.account !== input.accountId)
      throw new ToolError("forbidden", "A card check needs the context of a person acting as that account.");
    const account = await ensureAccount(billing, {
      accountId: input.accountId,
      accountKind: ctx.accountKind ?? "personal",
      ctx,
    });
    const cardOnFile =
      account.cardOnFile ||
      (billing.provider.kind === "stripe" && (await billing.provider.hasCard(account.customerId)));
    return {
      cardOnFile,
      addCardUrl: cardOnFile ? null : await linkFor(billing, ctx, account, { to: "checkout" }),
    };
  });
}
