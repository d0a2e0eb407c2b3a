import { apiRule, type ApiDeclaration } from "../spec/server-code.ts";
import { and, eq, inArray } from "drizzle-orm";
import type { AppRow } from "../apps-repo.ts";
import type { AppsContext } from "../context.ts";
import { secrets, versions } from "../db/schema.ts";
import { unconfirmedUses, type SecretUse } from "./destinations.ts";

export type { SecretUse };

/** The apis of the app's current version that name this secret, by name; [] before the first publish. */
export async function apisUsing(
  apps: Pick<AppsContext, "db">,
  app: Pick<AppRow, "id" | "currentVersion">,
  secret: string,
): Promise<SecretUse[]> {
  if (app.currentVersion === null) return [];
  const [version] = await apps.db
    .select({ config: versions.config })
    .from(versions)
    .where(and(eq(versions.appId, app.id), eq(versions.number, app.currentVersion)))
    .limit(1);
  return usesIn(version?.config ?? {}, secret);
}

/** The apis of a version's service.json that name this secret, by name. */
export function usesIn(config: Record<string, unknown>, secret: string): SecretUse[] {
  const declared = (config as { apis?: Record<string, ApiDeclaration> }).apis ?? {};
  return Object.entries(declared)
    .filter(([, api]) => api.secret === secret)
    .map(([name, api]) => {
      const rule = apiRule(api);
      return { name, url: rule.url, in: rule.in };
    })
    .sort((a, b) => (a.name < b.name ? -1 : 1));
}

/**
 * For the answer of a publish or rollback that made `config` current: the secrets with a value that some of its apis
 * do not get, because their destination is not the one the owner confirmed; null when there are none.
 */
export async function heldSecretsNote(
  apps: Pick<AppsContext, "db">,
  appId: string,
  config: Record<string, unknown>,
): Promise<string | null> {
  const declared = Object.values((config as { apis?: Record<string, ApiDeclaration> }).apis ?? {});
  const names = [...new Set(declared.map((api) => api.secret))];
  if (names.length === 0) return null;
  const rows = await apps.db
    .select({ name: secrets.name, destinations: secrets.destinations })
    .from(secrets)
    .where(and(eq(secrets.appId, appId), inArray(secrets.name, names)))
    .orderBy(secrets.name);
  const held = rows.flatMap((row) => {
    const waiting = unconfirmedUses(row.destinations, usesIn(config, row.name));
    return waiting.length ? [`${row.name} (${waiting.map((w) => `api ${w.api}`).join(", ")})`] : [];
  });
  return held.length
    ? `This version sends ${held.length === 1 ? "a secret" : "secrets"} to a new destination, so nothing is sent until the owner confirms it on the secret's page (tool_secret with the name gives it): ${held.join(", ")}.`
    : null;
}
