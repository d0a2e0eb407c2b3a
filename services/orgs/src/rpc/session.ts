import { bindRpc, type Database } from "@hatch/platform";
import { ResolveSessionInputSchema, ToolError, type SessionAccounts } from "@hatch/contracts";
import { z } from "zod";
import { accountsOf, ensurePerson, memberIn, toSession } from "../db/accounts.ts";

/**
 * The gateway asks which account a signed-in user acts as; the first time, their personal account is made. With
 * `account` (the dashboard's switcher): that account, answered only when the person belongs to it.
 */
export function resolveSessionRpc(db: Database) {
  return bindRpc(ResolveSessionInputSchema, async ({ ctx, input }) => {
    if (!ctx) throw new ToolError("forbidden", "A signed call context is required.");
    const person = await ensurePerson(db, { userId: ctx.sub, email: input.email, name: input.name });
    if (!input.account || input.account === person.accountId) return toSession(person);
    const chosen = await memberIn(db, ctx.sub, input.account);
    if (!chosen) throw new ToolError("not_found", "You do not belong to that account.");
    return toSession(chosen);
  });
}

/** `session.accounts`: the accounts the signed-in person belongs to, their personal one first. */
export function sessionAccountsRpc(db: Database) {
  return bindRpc(z.object({}), async ({ ctx }): Promise<SessionAccounts> => {
    if (!ctx) throw new ToolError("forbidden", "A signed call context is required.");
    const person = await ensurePerson(db, { userId: ctx.sub, email: ctx.email, name: ctx.name });
    const rows = await accountsOf(db, ctx.sub);
    return {
      accounts: rows
        .map((r) => ({ ...r, active: r.id === person.accountId }))
        .sort((a, b) => (a.kind === b.kind ? a.name.localeCompare(b.name) : a.kind === "personal" ? -1 : 1)),
    };
  });
}
