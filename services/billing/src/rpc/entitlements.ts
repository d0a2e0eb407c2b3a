import { bindRpc, EntitlementsInputSchema, limitsOf, type Entitlements } from "@hatch/shared";
import { eq } from "drizzle-orm";
import { settingsUrl, type BillingContext } from "../context.ts";
import { accounts } from "../db/schema.ts";

/** `entitlements`: what an account may do now. Nothing secret, so no ctx is needed; an unknown account is on free. */
export function entitlementsRpc(billing: BillingContext) {
  return bindRpc(
    EntitlementsInputSchema,
    async ({ input }): Promise<Entitlements> => {
      const [row] = await billing.db.select().from(accounts).where(eq(accounts.accountId, input.accountId));
      const plan = row?.plan ?? "free";
      const state = row?.state ?? "active";
      const seats = row?.seats ?? 1;
      return { accountId: input.accountId, plan, state, seats, limits: limitsOf(plan, state, seats), settingsUrl: settingsUrl(billing.config) };
    },
    { requiresContext: false },
  );
}
