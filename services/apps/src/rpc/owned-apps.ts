import {
  bindRpc,
  OwnedAppsListInputSchema,
  OwnedAppsMoveInputSchema,
  ToolError,
  type CallContext,
  type OwnedApps,
} from "@hatch/shared";
import { and, asc, eq, inArray } from "drizzle-orm";
import type { AppsContext } from "../context.ts";
import { appsTable } from "../db/schema.ts";
import { appEvent } from "../events.ts";
import { announceAppChanged } from "../host/announce.ts";

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

/** Moves every app the person owns in the account to another member, in one transaction, with an event each. */
export function moveOwnedRpc(apps: AppsContext) {
  return bindRpc(
    OwnedAppsMoveInputSchema,
    async ({ ctx, input }): Promise<OwnedApps> => {
      const caller = requireManagerOf(ctx, input.accountId);
      const moved = await apps.db.transaction(async (tx) => {
        const owned = await tx
          .select({
            id: appsTable.id,
            address: appsTable.address,
            name: appsTable.name,
            accountId: appsTable.accountId,
            ownerEmail: appsTable.ownerEmail,
          })
          .from(appsTable)
          .where(and(eq(appsTable.accountId, input.accountId), eq(appsTable.ownerId, input.fromUserId)))
          .orderBy(asc(appsTable.name), asc(appsTable.address))
          .for("update");
        if (owned.length === 0) return { apps: [] };
        await tx
          .update(appsTable)
          .set({
            ownerId: input.to.userId,
            ownerEmail: input.to.email,
            ownerName: input.to.name,
            updatedAt: new Date(),
          })
          .where(
            inArray(
              appsTable.id,
              owned.map((a) => a.id),
            ),
          );
        for (const app of owned) {
          await appEvent(tx, caller, "moved", app, {
            from: app.ownerEmail,
            to: input.to.email,
            summary: `from ${app.ownerEmail} to ${input.to.email}`,
          });
        }
        return { apps: owned.map((a) => ({ address: a.address, name: a.name })) };
      });
      // Who may open a private app changed with its owner.
      for (const app of moved.apps) announceAppChanged(apps, app.address);
      return moved;
    },
    { writes: true },
  );
}
