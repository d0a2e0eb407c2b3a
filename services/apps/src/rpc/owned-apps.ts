import { bindRpc } from "@hatch/platform";
import {
  OwnedAppsListInputSchema,
  OwnedAppsMoveInputSchema,
  ToolError,
  type CallContext,
  type OwnedApps,
} from "@hatch/contracts";
import { and, asc, eq } from "drizzle-orm";
import type { AppsContext } from "../context.ts";
import { appsTable } from "../db/schema.ts";
import { changeOwner, ownerChangeColumns, stopOwnKeyIn } from "../owner-change.ts";

const MANAGERS = ["owner", "admin", "manager"];

/** Only a manager of that very organization, as the signed context says, may see or move its people's apps. */
function requireManagerOf(ctx: CallContext | null, accountId: string): CallContext {
  if (!ctx || ctx.org !== accountId || !MANAGERS.includes(ctx.role ?? "")) {
    throw new ToolError("forbidden", "Only a manager of this organization can list or move its members' apps.");
  }
  return ctx;
}

/** The apps one person owns in one account, by name. */
export function listOwnedRpc(apps: AppsContext) {
  return bindRpc(OwnedAppsListInputSchema, async ({ ctx, input }): Promise<OwnedApps> => {
    requireManagerOf(ctx, input.accountId);
    const rows = await apps.db
      .select({ address: appsTable.address, name: appsTable.name })
      .from(appsTable)
      .where(and(eq(appsTable.accountId, input.accountId), eq(appsTable.ownerId, input.userId)))
      .orderBy(asc(appsTable.name), asc(appsTable.address));
    return { apps: rows };
  });
}

/**
 * The person leaves the account: every app they own there moves to another member (changeOwner) and their own AI key
 * stops paying for any app of it, in one transaction, with an event each.
 */
export function moveOwnedRpc(apps: AppsContext) {
  return bindRpc(
    OwnedAppsMoveInputSchema,
    async ({ ctx, input }): Promise<OwnedApps> => {
      // A person deleting their own account moves their own apps (orgs vouches for `to`: the organization's owner).
      const leaving = ctx?.sub === input.fromUserId && ctx.org === input.accountId;
      const caller = leaving && ctx ? ctx : requireManagerOf(ctx, input.accountId);
      const done = await apps.db.transaction(async (tx) => {
        const owned = await tx
          .select(ownerChangeColumns)
          .from(appsTable)
          .where(and(eq(appsTable.accountId, input.accountId), eq(appsTable.ownerId, input.fromUserId)))
          .orderBy(asc(appsTable.name), asc(appsTable.address))
          .for("update");
        const moved = await changeOwner(tx, caller, owned, input.to);
        const left = await stopOwnKeyIn(tx, caller, input.accountId, input.fromUserId);
        return { apps: owned.map((a) => ({ address: a.address, name: a.name })), aiReset: [...moved, ...left] };
      });
      return done;
    },
    { writes: true },
  );
}
