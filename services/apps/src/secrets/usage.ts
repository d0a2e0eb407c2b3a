import { apiRule, type ApiDeclaration, type ApiPlacement } from "@hatch/shared";
import { and, eq } from "drizzle-orm";
import type { AppRow } from "../apps-repo.ts";
import type { AppsContext } from "../context.ts";
import { versions } from "../db/schema.ts";

/** An API of the current version's service.json that uses a secret. */
export interface SecretUse {
  name: string;
  /** The API's base url. */
  url: string;
  /** Where the value goes in the request. */
  in: ApiPlacement;
}

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
