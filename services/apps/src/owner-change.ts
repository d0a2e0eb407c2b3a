import type { AiReset, CallContext } from "@hatch/contracts";
import type { Database } from "@hatch/platform";
import { and, asc, eq, inArray } from "drizzle-orm";
import { hasKey } from "./ai/keys.ts";
import type { AppRow } from "./apps-repo.ts";
import { appsTable } from "./db/schema.ts";
import { appEvent } from "./events.ts";

// An app's owner changes in one place, changeOwner(). What points at a person rather than at the app must not
// outlive the change: today that is the AI key choice `mine` (a person's own key pays). What belongs to the app stays
// with it: its secrets, its own AI key (`tool`), the `company` choice (the account's key), who it is shared with, its
// data and versions. Server code acts as the owner of the moment (env-host.ts reads the owner per request).

type Tx = Pick<Database, "select" | "update" | "insert">;

/** The columns an owner change needs, from rows the caller locked (select … for update) in its transaction. */
export type OwnerChangeApp = Pick<
  AppRow,
  "id" | "address" | "name" | "accountId" | "ownerEmail" | "ownerName" | "aiChoice" | "aiPayerId"
>;

export const ownerChangeColumns = {
  id: appsTable.id,
  address: appsTable.address,
  name: appsTable.name,
  accountId: appsTable.accountId,
  ownerEmail: appsTable.ownerEmail,
  ownerName: appsTable.ownerName,
  aiChoice: appsTable.aiChoice,
  aiPayerId: appsTable.aiPayerId,
};

export interface NewOwner {
  userId: string;
  email: string;
  name: string;
}

/**
 * Gives the apps to `to` inside the caller's transaction, with an `app.moved` event each. A `mine` choice stays only
 * when its payer is the new owner; any other person's key stops paying (resetOwnKey). Answers those resets.
 */
export async function changeOwner(
  tx: Tx,
  caller: CallContext,
  rows: OwnerChangeApp[],
  to: NewOwner,
): Promise<AiReset[]> {
  if (rows.length === 0) return [];
  await tx
    .update(appsTable)
    .set({ ownerId: to.userId, ownerEmail: to.email, ownerName: to.name, updatedAt: new Date() })
    .where(
      inArray(
        appsTable.id,
        rows.map((a) => a.id),
      ),
    );
  const resets: AiReset[] = [];
  for (const app of rows) {
    await appEvent(tx, caller, "moved", app, {
      from: app.ownerEmail,
      to: to.email,
      summary: `from ${app.ownerEmail} to ${to.email}`,
    });
    if (app.aiChoice === "mine" && app.aiPayerId !== to.userId)
      resets.push(await resetOwnKey(tx, caller, app, { email: to.email, name: to.name }, true));
  }
  return resets;
}

/**
 * `userId` leaves the account: their own key stops paying for every app of it they chose it for, whoever owns the
 * app (an organization manager may choose their own key for a colleague's app).
 */
export async function stopOwnKeyIn(tx: Tx, caller: CallContext, accountId: string, userId: string): Promise<AiReset[]> {
  const rows = await tx
    .select(ownerChangeColumns)
    .from(appsTable)
    .where(and(eq(appsTable.accountId, accountId), eq(appsTable.aiChoice, "mine"), eq(appsTable.aiPayerId, userId)))
    .orderBy(asc(appsTable.address))
    .for("update");
  const resets: AiReset[] = [];
  for (const app of rows)
    resets.push(await resetOwnKey(tx, caller, app, { email: app.ownerEmail, name: app.ownerName }, false));
  return resets;
}

/** `mine` → the organization's key when the account has one, else none; an `app.ai_choice_changed` event says why. */
async function resetOwnKey(
  tx: Tx,
  caller: CallContext,
  app: OwnerChangeApp,
  owner: AiReset["owner"],
  moved: boolean,
): Promise<AiReset> {
  const now = (await hasKey(tx, "company", app.accountId)) ? "company" : "none";
  await tx
    .update(appsTable)
    .set({ aiChoice: now, aiPayerId: null, updatedAt: new Date() })
    .where(eq(appsTable.id, app.id));
  const why = moved ? "the app changed owner" : "that person left the organization";
  const pays =
    now === "company" ? "the organization's AI key pays now" : "AI calls are off until its owner chooses a key";
  await appEvent(tx, caller, "ai_choice_changed", app, {
    from: "mine",
    to: now,
    reason: moved ? "owner_changed" : "payer_left",
    summary: `a person's own AI key no longer pays (${why}); ${pays}`,
  });
  return { address: app.address, name: app.name, owner, moved, now };
}
