import type { CallContext, Database } from "@hatch/shared";
import { and, eq } from "drizzle-orm";
import type { AppRow } from "../apps-repo.ts";
import type { AppsContext } from "../context.ts";
import { secrets } from "../db/schema.ts";
import { appEvent } from "../events.ts";
import { secretAad } from "./sealed.ts";

// An app's secrets as rows: values go in sealed (AES-256-GCM, the row's app id and name as associated data) and come
// out only in openSecret, which the API caller uses at the moment it injects one. Everything else sees the status.

export interface SecretStatus {
  isSet: boolean;
  /** ISO 8601; null when not set. */
  updatedAt: string | null;
  /** Email of the person who set it; null when not set. */
  updatedBy: string | null;
}

const NOT_SET: SecretStatus = { isSet: false, updatedAt: null, updatedBy: null };

type Reader = Pick<Database, "select">;

export async function secretStatus(db: Reader, appId: string, name: string): Promise<SecretStatus> {
  const [row] = await db
    .select({ updatedAt: secrets.updatedAt, updatedBy: secrets.updatedByEmail })
    .from(secrets)
    .where(and(eq(secrets.appId, appId), eq(secrets.name, name)))
    .limit(1);
  return row ? { isSet: true, updatedAt: row.updatedAt.toISOString(), updatedBy: row.updatedBy } : NOT_SET;
}

/** Stores (or replaces) a value, with its event, in one transaction. The event names the secret ("… set a secret of Weather (weather): WEATHER_KEY"), never the value. */
export async function setSecret(
  apps: AppsContext,
  ctx: CallContext,
  app: AppRow,
  name: string,
  value: string,
): Promise<SecretStatus> {
  const sealed = apps.sealer.seal(value, secretAad(app.id, name));
  const now = new Date();
  await apps.db.transaction(async (tx) => {
    const row = {
      keyId: sealed.keyId,
      sealed: sealed.sealed,
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
  return { isSet: true, updatedAt: now.toISOString(), updatedBy: ctx.email };
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

/**
 * The plaintext of a secret, for injection into one outbound request; null when it is not set. Throws when the row
 * does not open (its key is no longer configured, or the row was tampered with): callers answer `unavailable`.
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
