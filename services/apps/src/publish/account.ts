import { checkLimit, checkLimitLocked, type Database } from "@hatch/platform";
import { type CallContext, type Entitlements } from "@hatch/contracts";
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
 * The account an app belongs to, as the caller knows it; never its internal id in a text. `value` (structured
 * content): `personal`, or the organization's id (an organization's account id is its org id). `label` reads in a
 * sentence ("your personal account", "the organization Acme"); `name` is short ("personal", "Acme").
 */
export function accountOfApp(
  ctx: Pick<CallContext, "account" | "accountKind" | "org" | "orgName">,
  accountId: string,
): { value: string; label: string; name: string } {
  if (accountId === ctx.account && ctx.accountKind === "personal")
    return { value: "personal", label: "your personal account", name: "personal" };
  if (accountId === ctx.account) {
    const value = ctx.org ?? accountId;
    return ctx.orgName
      ? { value, label: `the organization ${ctx.orgName}`, name: ctx.orgName }
      : { value, label: "your organization", name: "your organization" };
  }
  // Only an app's owner is told its account (publish, the tar upload), and an owner's app outside the account they act
  // in is in their personal one: a person belongs to one organization at a time, and their apps stay when they leave.
  return { value: "personal", label: "your personal account", name: "personal" };
}
