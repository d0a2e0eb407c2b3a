import { bindRpc } from "@hatch/platform";
import { RefundInputSchema, ToolError, type RefundResult } from "@hatch/contracts";
import { and, eq } from "drizzle-orm";
import type { BillingContext } from "../context.ts";
import { charges } from "../db/schema.ts";

// `refund`: gives back a one-off charge made with `charge` (a domain whose registration failed), by the charge's
// idempotency key. Idempotent: a refunded charge answers refunded again without a second refund at the provider (whose
// own idempotency key is `<key>.refund`, so two calls racing refund once). Called with the ctx of the person acting as
// the account, or without a ctx by a service (the bus is internal); a ctx of another account is refused.

export function refundRpc(billing: BillingContext) {
  return bindRpc(
    RefundInputSchema,
    async ({ ctx, input, log }): Promise<RefundResult> => {
      if (ctx && ctx.account !== input.accountId)
        throw new ToolError("forbidden", "A refund needs the context of a person acting as that account.");
      const [charge] = await billing.db.select().from(charges).where(eq(charges.idempotencyKey, input.idempotencyKey));
      if (!charge || charge.accountId !== input.accountId) return { status: "not_charged" };
      if (charge.status === "refunded") return { status: "refunded" };
      if (charge.status === "pending")
        throw new ToolError("unavailable", "This charge is still being made; ask for the refund again in a moment.");
      if (charge.status !== "charged" || !charge.providerChargeId) return { status: "not_charged" };
      await billing.provider.refund(charge.providerChargeId, `${input.idempotencyKey}.refund`);
      await billing.db
        .update(charges)
        .set({ status: "refunded", message: input.reason, updatedAt: new Date() })
        .where(and(eq(charges.idempotencyKey, input.idempotencyKey), eq(charges.status, "charged")));
      log.info("refund", { account: input.accountId, amountMinor: charge.amountMinor });
      return { status: "refunded" };
    },
    { requiresContext: false, writes: true },
  );
}
