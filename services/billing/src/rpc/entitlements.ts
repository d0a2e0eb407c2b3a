import { bindRpc } from "@hatch/platform";
import { EntitlementsInputSchema, limitsOf, type Entitlements } from "@hatch/contracts";
import { eq } from "drizzle-orm";
import { companyAiTokensThisMonth } from "../account.ts";
import { settingsUrl, type BillingContext } from "../context.ts";
import { accounts } from "../db/schema.ts";

/** BILLING_ENFORCE_LIMITS=false: a server that bills nobody (self-hosted, and tests about other things). */
const NO_LIMITS = { apps: null, customDomains: null, storageBytes: null, companyAiTokensPerMonth: null, seats: null };

/** `entitlements`: what an account may do now. Nothing secret, so no ctx is needed; an unknown account is on free. */
export function entitlementsRpc(billing: BillingContext) {
  return bindRpc(
    EntitlementsInputSchema,
    async ({ input }): Promise<Entitlements> => {
      const [row] = await billing.db.select().from(accounts).where(eq(accounts.accountId, input.accountId));
      const plan = row?.plan ?? "free";
      const state = row?.state ?? "active";
      const seats = row?.seats ?? 1;
      const limits = billing.config.enforceLimits ? limitsOf(plan, state, seats) : NO_LIMITS;
      const companyTokens = await companyAiTokensThisMonth(billing, input.accountId);
      return {
        accountId: input.accountId,
        plan,
        state,
        seats,
        limits,
        settingsUrl: settingsUrl(billing.config),
        companyAiTokensThisMonth: companyTokens,
      };
    },
    { requiresContext: false },
  );
}
