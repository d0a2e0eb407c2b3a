import { checkLimit, checkLimitLocked, type CallContext, type Database, type Entitlements } from "@hatch/shared";
import { count, eq } from "drizzle-orm";
import type { AppsContext } from "../context.ts";
import { appsTable } from "../db/schema.ts";

/**
 * A new app must fit the account's plan: asked early (before anything is asked or uploaded, and again when a tar
 * arrives) so a full account hears it first; the check that holds is checkAppLimitLocked, in the app's transaction.
 */
export async function checkAppLimit(app: AppsContext, accountId: string): Promise<void> {
  const entitlements = await app.entitlements?.get(accountId);
  if (!entitlements || entitlements.limits.apps === null) return;
  checkLimit(entitlements, "apps", await appCount(app.db, accountId));
}

/** In the transaction that creates the app (publish/commit.ts): counted under the account's lock, so publishes at once cannot pass the limit together. */
export function checkAppLimitLocked(
  tx: Pick<Database, "select" | "execute">,
  entitlements: Entitlements | null,
  accountId: string,
): Promise<void> {
  return checkLimitLocked(tx, { entitlements, limit: "apps", accountId, used: () => appCount(tx, accountId) });
}

async function appCount(db: Pick<Database, "select">, accountId: string): Promise<number> {
  const [row] = await db.select({ n: count() }).from(appsTable).where(eq(appsTable.accountId, accountId));
  return row?.n ?? 0;
}

/**
 * The account an app belongs to, as the caller knows it: `personal`, or the organization's id (an organization's
 * account id is its org id). `label` reads in a sentence ("your personal account", "the organization org_…").
 */
export function accountOfApp(
  ctx: Pick<CallContext, "account" | "accountKind" | "org">,
  accountId: string,
): { value: string; label: string } {
  if (accountId === ctx.account && ctx.accountKind === "personal")
    return { value: "personal", label: "your personal account" };
  if (accountId === ctx.account)
    return { value: ctx.org ?? accountId, label: `the organization ${ctx.org ?? accountId}` };
  return { value: accountId, label: `the account ${accountId}` };
}
