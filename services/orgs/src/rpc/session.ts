import { bindRpc, type Database } from "@hatch/platform";
import { ResolveSessionInputSchema, ToolError } from "@hatch/contracts";
import { ensurePerson, toSession } from "../db/accounts.ts";

/** The gateway asks which account a signed-in user acts as; the first time, their personal account is made. */
export function resolveSessionRpc(db: Database) {
  return bindRpc(ResolveSessionInputSchema, async ({ ctx, input }) => {
    if (!ctx) throw new ToolError("forbidden", "A signed call context is required.");
    return toSession(await ensurePerson(db, { userId: ctx.sub, email: input.email, name: input.name }));
  });
}
