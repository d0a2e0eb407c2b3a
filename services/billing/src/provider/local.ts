import { PLAN_TABLE, randomId } from "@hatch/contracts";
import { type Database } from "@hatch/platform";
import { createHash } from "node:crypto";
import { eq } from "drizzle-orm";
import { accounts } from "../db/schema.ts";
import type { ChargeOutcome, CheckoutRequest, OneOffCharge, PaymentProvider, ProviderReceipt } from "./types.ts";

// The provider of `bun run dev` and of tests without Stripe. Its checkout and portal are the gateway's pages
// (/dashboard/billing/checkout and /dashboard/billing/portal); what the person does there reaches billing as
// `local.act` and becomes BillingUpdates (rpc/local-act.ts). It holds no state of its own: whether a card is on file
// is the account row's flag, and a charge id is derived from its idempotency key, so the same key is the same charge.

export function createLocalProvider(db: Database, baseUrl: string): PaymentProvider {
  return {
    kind: "local",
    async createCustomer() {
      return `cus_local_${randomId(16)}`;
    },
    async checkoutUrl(request: CheckoutRequest) {
      const query = new URLSearchParams({ mode: request.mode });
      if (request.plan) query.set("plan", request.plan);
      if (request.plan === "team" && request.seats) query.set("seats", String(request.seats));
      return `${baseUrl}/dashboard/billing/checkout?${query}`;
    },
    async portalUrl() {
      return `${baseUrl}/dashboard/billing/portal`;
    },
    async seatsUrl(request) {
      return `${baseUrl}/dashboard/billing/portal?seats=${request.seats}`;
    },
    async charge(charge: OneOffCharge): Promise<ChargeOutcome> {
      const [account] = await db
        .select({ cardOnFile: accounts.cardOnFile })
        .from(accounts)
        .where(eq(accounts.customerId, charge.customerId));
      if (!account?.cardOnFile) return { status: "refused", reason: "no_card", message: "No card is on file." };
      const id = createHash("sha256").update(charge.idempotencyKey).digest("hex").slice(0, 24);
      return { status: "charged", chargeId: `ch_local_${id}` };
    },
    async hasCard(customerId: string) {
      const [account] = await db
        .select({ cardOnFile: accounts.cardOnFile })
        .from(accounts)
        .where(eq(accounts.customerId, customerId));
      return account?.cardOnFile ?? false;
    },
    async refund() {
      // Nothing left the building: a local charge is only the row billing keeps.
    },
    /**
     * The local provider keeps no invoices: a paid plan's current period is its one receipt (the plan and, for Team,
     * the seats as the line's quantity). One-off charges are billing's own rows (rpc/receipts.ts), as with Stripe.
     */
    async receipts(customerId: string): Promise<ProviderReceipt[]> {
      const [account] = await db.select().from(accounts).where(eq(accounts.customerId, customerId));
      if (!account || account.plan === "free" || account.plan === "enterprise" || !account.currentPeriodEnd) return [];
      const info = PLAN_TABLE[account.plan];
      const quantity = info.perSeat ? account.seats : 1;
      const unit = info.monthlyCents ?? 0;
      const end = account.currentPeriodEnd;
      const start = new Date(Date.UTC(end.getUTCFullYear(), end.getUTCMonth() - 1, end.getUTCDate()));
      return [
        {
          id: `in_local_${createHash("sha256").update(`${customerId}.${start.toISOString()}`).digest("hex").slice(0, 16)}`,
          number: null,
          date: start,
          status: account.state === "past_due" || account.state === "suspended" ? "open" : "paid",
          totalMinor: unit * quantity,
          currency: "USD",
          lines: [
            {
              description: `${info.title}${info.perSeat ? " seat" : ""}, ${start.toISOString().slice(0, 10)} to ${end.toISOString().slice(0, 10)}`,
              quantity,
              amountMinor: unit * quantity,
            },
          ],
          url: null,
        },
      ];
    },
  };
}
