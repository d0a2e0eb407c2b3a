import type { ApiPlacement, CallContext } from "@hatch/contracts";
import type { Database } from "@hatch/platform";
import { and, eq } from "drizzle-orm";
import type { AppRow } from "../apps-repo.ts";
import type { AppsContext } from "../context.ts";
import { secrets, type BoundDestination } from "../db/schema.ts";
import { appEvent } from "../events.ts";
import { isConfirmed } from "./destinations.ts";
import { secretAad } from "./sealed.ts";

// An app's secrets as rows: values go in sealed (AES-256-GCM, the row's app id and name as associated data) and come
// out only in openSecretFor, which the API caller uses at the moment it injects one, and only for a destination the
// person who set it saw (src/secrets/destinations.ts). Everything else sees the status.

export interface SecretStatus {
  isSet: boolean;
  /** ISO 8601; null when not set. */
  updatedAt: string | null;
  /** Email of the person who set it; null when not set. */
  updatedBy: string | null;
  /** Where the value may go (empty when not set). */
  destinations: BoundDestination[];
}

const NOT_SET: SecretStatus = { isSet: false, updatedAt: null, updatedBy: null, destinations: [] };

type Reader = Pick<Database, "select">;

export async function secretStatus(db: Reader, appId: string, name: string): Promise<SecretStatus> {
  const [row] = await db
    .select({ updatedAt: secrets.updatedAt, updatedBy: secrets.updatedByEmail, destinations: secrets.destinations })
    .from(secrets)
    .where(and(eq(secrets.appId, appId), eq(secrets.name, name)))
    .limit(1);
  return row
    ? {
        isSet: true,
        updatedAt: row.updatedAt.toISOString(),
        updatedBy: row.updatedBy,
        destinations: row.destinations,
      }
    : NOT_SET;
}

/**
 * Stores (or replaces) a value bound to `destinations` (what the page showed), with its event, in one transaction.
 * The event names the secret ("… set a secret of Weather (weather): WEATHER_KEY"), never the value.
 */
export async function setSecret(
  apps: AppsContext,
  ctx: CallContext,
  app: AppRow,
  name: string,
  value: string,
  destinations: BoundDestination[],
): Promise<SecretStatus> {
  const sealed = apps.sealer.seal(value, secretAad(app.id, name));
  const now = new Date();
  await apps.db.transaction(async (tx) => {
    const row = {
      keyId: sealed.keyId,
      sealed: sealed.sealed,
      destinations,
      updatedBy: ctx.sub,
      updatedByEmail: ctx.email,
      updatedAt: now,
    };
    await tx
      .insert(secrets)
      .values({ appId: app.id, name, ...row })
      .onConflictDoUpdate({ target: [secrets.appId, secrets.name], set: row });
    await appEvent(tx, ctx, "secret_set", app, { secret: name, summary: name });
  });
  return { isSet: true, updatedAt: now.toISOString(), updatedBy: ctx.email, destinations };
}

/**
 * Binds the value already set to `destinations` (the page's confirm), with its event; false when no value is set.
 * Who confirmed and when become the row's `updated_*`: the page shows who last decided where the value goes.
 */
export async function confirmDestinations(
  apps: Pick<AppsContext, "db">,
  ctx: CallContext,
  app: AppRow,
  name: string,
  destinations: BoundDestination[],
): Promise<boolean> {
  return apps.db.transaction(async (tx) => {
    const done = await tx
      .update(secrets)
      .set({ destinations, updatedBy: ctx.sub, updatedByEmail: ctx.email, updatedAt: new Date() })
      .where(and(eq(secrets.appId, app.id), eq(secrets.name, name)))
      .returning({ name: secrets.name });
    if (done.length === 0) return false;
    const where = destinations.map((d) => d.url).join(", ");
    await appEvent(tx, ctx, "secret_confirmed", app, { secret: name, summary: `${name} to ${where}` });
    return true;
  });
}

/**
 * Deletes a secret inside the caller's transaction (tool_secret spends its confirmation there too); false when there
 * was none, and then no event is written.
 */
export async function deleteSecret(
  tx: Pick<Database, "delete" | "insert">,
  ctx: CallContext,
  app: AppRow,
  name: string,
): Promise<boolean> {
  const gone = await tx
    .delete(secrets)
    .where(and(eq(secrets.appId, app.id), eq(secrets.name, name)))
    .returning({ name: secrets.name });
  if (gone.length === 0) return false;
  await appEvent(tx, ctx, "secret_deleted", app, { secret: name, summary: name });
  return true;
}

/** What openSecretFor found: the value, or why there is none for this destination. */
export type SecretFor =
  | { state: "set"; value: string }
  | { state: "unset" }
  | { state: "unconfirmed"; bound: BoundDestination[] };

/**
 * The plaintext of a secret for one outbound request to `to`, only when the person who set it confirmed that
 * destination. The value is not opened otherwise. Throws when the row does not open (see openSecret).
 */
export async function openSecretFor(
  apps: Pick<AppsContext, "db" | "sealer">,
  appId: string,
  name: string,
  to: { url: string; in: ApiPlacement },
): Promise<SecretFor> {
  const [row] = await apps.db
    .select({ keyId: secrets.keyId, sealed: secrets.sealed, destinations: secrets.destinations })
    .from(secrets)
    .where(and(eq(secrets.appId, appId), eq(secrets.name, name)))
    .limit(1);
  if (!row) return { state: "unset" };
  if (!isConfirmed(row.destinations, to)) return { state: "unconfirmed", bound: row.destinations };
  return { state: "set", value: apps.sealer.open(row, secretAad(appId, name)) };
}

/**
 * The plaintext of a secret whatever its destinations (tests and key rotation checks); null when it is not set. Throws
 * when the row does not open (its key is no longer configured, or the row was tampered with). Calls use openSecretFor.
 */
export async function openSecret(
  apps: Pick<AppsContext, "db" | "sealer">,
  appId: string,
  name: string,
): Promise<string | null> {
  const [row] = await apps.db
    .select({ keyId: secrets.keyId, sealed: secrets.sealed })
    .from(secrets)
    .where(and(eq(secrets.appId, appId), eq(secrets.name, name)))
    .limit(1);
  return row ? apps.sealer.open(row, secretAad(appId, name)) : null;
}
