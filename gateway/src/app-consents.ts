import type { Database } from "@hatch/platform";
import type { ViewerOrigin } from "@hatch/contracts";
import { and, desc, eq } from "drizzle-orm";
import { appConsents } from "./db/schema.ts";

// A person's yes to a public app learning who they are (their name and email, through hatch.me() and the app's data
// and server code). Asked once per person and app on the consent page of /apps/signin; listed on the dashboard with
// Remove. The app host asks on every data request whether it still holds (viewer-check.ts), so Remove counts at once.

/** What the apps service says about a public app (`viewer.origin`'s `public`). */
export type PublicApp = NonNullable<ViewerOrigin["public"]>;

/** Apps of one's own, and of the account (organization) one acts as, need no consent: anyone else's public app does. */
export function consentNeeded(app: PublicApp, viewer: { sub: string; account: string }): boolean {
  return app.owner.id !== viewer.sub && app.account !== viewer.account;
}

/** Whether `userId` agreed that this app learns who they are, while it has the owner it has now. */
export async function hasConsent(db: Database, userId: string, app: { id: string; owner: string }): Promise<boolean> {
  const [row] = await db
    .select({ ownerId: appConsents.ownerId })
    .from(appConsents)
    .where(and(eq(appConsents.userId, userId), eq(appConsents.appId, app.id)))
    .limit(1);
  return row?.ownerId === app.owner;
}

/** Records the yes (again, for a new owner: the page named them). */
export async function recordConsent(db: Database, userId: string, address: string, app: PublicApp): Promise<void> {
  const values = { ownerId: app.owner.id, address, appName: app.name, ownerName: app.owner.name };
  await db
    .insert(appConsents)
    .values({ userId, appId: app.id, ...values })
    .onConflictDoUpdate({ target: [appConsents.userId, appConsents.appId], set: { ...values, createdAt: new Date() } });
}

export interface ConsentEntry {
  appId: string;
  address: string;
  appName: string;
  ownerName: string;
  since: Date;
}

/** Every app this person let learn who they are, newest first (bounded: a page lists them). */
export async function listConsents(db: Database, userId: string): Promise<ConsentEntry[]> {
  return db
    .select({
      appId: appConsents.appId,
      address: appConsents.address,
      appName: appConsents.appName,
      ownerName: appConsents.ownerName,
      since: appConsents.createdAt,
    })
    .from(appConsents)
    .where(eq(appConsents.userId, userId))
    .orderBy(desc(appConsents.createdAt))
    .limit(500);
}

/** Takes the yes back; the removed entry, or null when there was none (another tab removed it already). */
export async function removeConsent(db: Database, userId: string, appId: string): Promise<ConsentEntry | null> {
  const [row] = await db
    .delete(appConsents)
    .where(and(eq(appConsents.userId, userId), eq(appConsents.appId, appId)))
    .returning({
      appId: appConsents.appId,
      address: appConsents.address,
      appName: appConsents.appName,
      ownerName: appConsents.ownerName,
      since: appConsents.createdAt,
    });
  return row ?? null;
}
