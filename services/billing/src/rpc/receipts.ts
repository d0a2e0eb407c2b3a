import { bindRpc } from "@hatch/platform";
import { type Receipts } from "@hatch/contracts";
import { and, desc, eq, inArray } from "drizzle-orm";
import { z } from "zod";
import { ensureAccount, money, payerOf } from "../account.ts";
import type { BillingContext } from "../context.ts";
import { charges } from "../db/schema.ts";
import type { ProviderReceipt } from "../provider/types.ts";

// `receipts` (/dashboard/billing): the account's invoices from the provider (a plan's periods; Team's seats are the
// line's quantity) and a receipt for each one-off charge the provider made (a domain's first year or renewal, shown
// as refunded once given back), newest first. Who may see them: as `settings` (payerOf).

const LIMIT = 12;

export function receiptsRpc(billing: BillingContext) {
  return bindRpc(z.object({}), async ({ ctx }): Promise<Receipts> => {
    const payer = payerOf(ctx);
    const account = await ensureAccount(billing, payer);
    const [invoices, oneOff] = await Promise.all([
      billing.provider.receipts(account.customerId, LIMIT),
      billing.db
        .select()
        .from(charges)
        .where(and(eq(charges.accountId, account.accountId), inArray(charges.status, ["charged", "refunded"])))
        .orderBy(desc(charges.createdAt))
        .limit(LIMIT),
    ]);
    const fromCharges: ProviderReceipt[] = oneOff.map((charge) => ({
      id: charge.providerChargeId ?? charge.idempotencyKey,
      number: null,
      date: charge.createdAt,
      status: charge.status === "refunded" ? "refunded" : "paid",
      totalMinor: charge.amountMinor,
      currency: charge.currency,
      lines: [{ description: charge.description, quantity: 1, amountMinor: charge.amountMinor }],
      url: null,
    }));
    const all = [...invoices, ...fromCharges].sort((a, b) => b.date.getTime() - a.date.getTime()).slice(0, LIMIT);
    return {
      receipts: all.map((r) => ({
        id: r.id,
        number: r.number,
        date: r.date.toISOString().slice(0, 10),
        status: r.status,
        total: money(r.totalMinor),
        lines: r.lines.map((line) => ({
          description: line.description,
          quantity: line.quantity,
          amount: money(line.amountMinor),
        })),
        url: r.url,
      })),
    };
  });
}
