import { AccountStorageInputSchema } from "@hatch/contracts";
import { bindRpc, type RpcBinding } from "@hatch/platform";
import { and, count, eq } from "drizzle-orm";
import type { DomainsContext } from "../context.ts";
import { hostnames } from "../db/schema.ts";

/**
 * `rpc.domains.custom.count`: how many custom domains an account's apps are on, for billing's usage against the plan's
 * limit. Only a number per account, asked without a person's context (billing shows it to that account's own people),
 * like apps' `storage` and orgs' `seats.used`.
 */
export function customCountRpc(domains: Pick<DomainsContext, "db">): RpcBinding {
  return bindRpc(
    AccountStorageInputSchema,
    async ({ input }) => {
      const [row] = await domains.db
        .select({ n: count() })
        .from(hostnames)
        .where(and(eq(hostnames.accountId, input.accountId), eq(hostnames.kind, "custom")));
      return { custom: row?.n ?? 0 };
    },
    { requiresContext: false },
  );
}
