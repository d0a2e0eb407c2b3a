import { checkLimit, type CallContext } from "@hatch/shared";
import { count, eq } from "drizzle-orm";
import type { AppsContext } from "../context.ts";
import { appsTable } from "../db/schema.ts";

/** A new app must fit the account's plan (before anything is asked or uploaded, and again when a tar arrives). */
export async function checkAppLimit(app: AppsContext, accountId: string): Promise<void> {
  const entitlements = await app.entitlements?.get(accountId);
  if (!entitlements || entitlements.limits.apps === null) return;
  const [row] = await app.db.select({ n: count() }).from(appsTable).where(eq(appsTable.accountId, accountId));
  checkLimit(entitlements, "apps", row?.n ?? 0);
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
