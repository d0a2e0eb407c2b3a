import { randomId } from "@hatch/contracts";
import { type Database } from "@hatch/platform";
import { createHash } from "node:crypto";
import { eq } from "drizzle-orm";
import { accounts } from "../db/schema.ts";
import type { ChargeOutcome, CheckoutRequest, OneOffCharge, PaymentProvider } from "./types.ts";

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
  };
}
