import { bindRpc } from "@hatch/platform";
import { SeatsUsedInputSchema, type SeatsUsed } from "@hatch/contracts";
import { and, count, eq, gt, isNull } from "drizzle-orm";
import type { OrgsContext } from "../context.ts";
import type { Tx } from "../db/accounts.ts";
import { invitations, members } from "../db/schema.ts";

/** The seats an organization uses: its members and its open invitations (not accepted, revoked or expired). */
export async function seatsUsed(db: Tx, accountId: string, now = new Date()): Promise<SeatsUsed> {
  const [held] = await db.select({ n: count() }).from(members).where(eq(members.accountId, accountId));
  const [open] = await db
    .select({ n: count() })
    .from(invitations)
    .where(
      and(
        eq(invitations.accountId, accountId),
        isNull(invitations.acceptedAt),
        isNull(invitations.revokedAt),
        gt(invitations.expiresAt, now),
      ),
    );
  return { members: held?.n ?? 0, invitations: open?.n ?? 0 };
}

/** `rpc.orgs.seats.used`: billing's default seats for a Team checkout. A count only; no context needed. */
export function seatsUsedRpc(orgs: OrgsContext) {
  return bindRpc(SeatsUsedInputSchema, async ({ input }) => seatsUsed(orgs.db, input.accountId), {
    requiresContext: false,
  });
}
