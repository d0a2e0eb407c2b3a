import { and, eq } from "drizzle-orm";
import { type AiKeyChoice } from "@hatch/contracts";
import { apiRule, type ApiDeclaration, type ApiRule } from "../spec/server-code.ts";
import {
  bucketRules,
  collectionRules,
  type BucketOperation,
  type BucketRules,
  type CollectionOperation,
  type CollectionRules,
  type DataRule,
} from "../spec/data-rules.ts";
import { type Database } from "@hatch/platform";
import { appPeople, appsTable, versionFiles, versions } from "../db/schema.ts";
import { cacheControlOf, isHtml } from "./paths.ts";

export type Visibility = "private" | "org" | "people" | "public";

/** What the app host needs to answer for one address, loaded once and kept in memory (see cache.ts). */
export interface HostedApp {
  id: string;
  address: string;
  accountId: string;
  ownerId: string;
  visibility: Visibility;
  paused: boolean;
  /** Lower-cased emails the app is shared with (only filled for `people` visibility, the only one that reads it). */
  people: ReadonlySet<string>;
  /** The current version, or null when nothing has been published yet. */
  site: Site | null;
  /** tool_ai: whose key pays for AI calls; for `mine`, the user whose key it is. */
  ai: { choice: AiKeyChoice; payerId: string | null };
}

export interface Site {
  version: number;
  /** service.json `spa`: unknown paths without an extension are answered with index.html. */
  spa: boolean;
  /** The file served (with status 404) for unknown paths: service.json `notFound`, else 404.html when present. */
  notFound: SiteFile | null;
  files: ReadonlyMap<string, SiteFile>;
  /** service.json `collections`, every operation's rule filled in (unnamed ones are `owner`). */
  collections: ReadonlyMap<string, Record<CollectionOperation, DataRule>>;
  /** service.json `buckets`, likewise, with `maxFileSize` in bytes. */
  buckets: ReadonlyMap<string, Record<BucketOperation, DataRule> & { maxFileSize: number }>;
  /** service.json `server`: the path of the server module (a file of this version), or null. */
  server: SiteFile | null;
  /** service.json `apis`, defaults filled in. */
  apis: ReadonlyMap<string, ApiRule>;
}

export interface SiteFile {
  path: string;
  sha256: string;
  size: number;
  html: boolean;
  /** Built once per load, so serving a file allocates no header strings. */
  headers: Readonly<Record<string, string>>;
  /** The same as a Headers object, which a Response copies at half the cost of a plain object (never mutate it). */
  responseHeaders: Headers;
}

interface FileRow {
  path: string;
  sha256: string;
  size: number;
  contentType: string;
}

/** Reads an app by address with its current version's files; null for an unknown or deleted address. */
export async function loadHostedApp(db: Database, address: string): Promise<HostedApp | null> {
  const [app] = await db
    .select({
      id: appsTable.id,
      address: appsTable.address,
      accountId: appsTable.accountId,
      ownerId: appsTable.ownerId,
      visibility: appsTable.visibility,
      paused: appsTable.paused,
      currentVersion: appsTable.currentVersion,
      aiChoice: appsTable.aiChoice,
      aiPayerId: appsTable.aiPayerId,
    })
    .from(appsTable)
    .where(eq(appsTable.address, address))
    .limit(1);
  if (!app) return null;
  const people =
    app.visibility === "people"
      ? new Set(
          (await db.select({ email: appPeople.email }).from(appPeople).where(eq(appPeople.appId, app.id))).map((p) =>
            p.email.toLowerCase(),
          ),
        )
      : new Set<string>();
  const site =
    app.currentVersion === null ? null : await loadSite(db, app.id, app.currentVersion, app.visibility === "public");
  return {
    id: app.id,
    address: app.address,
    accountId: app.accountId,
    ownerId: app.ownerId,
    visibility: app.visibility,
    paused: app.paused,
    people,
    site,
    ai: { choice: app.aiChoice, payerId: app.aiPayerId },
  };
}

/** One version's site (a preview serves a non-current one); null when the app has no such version. */
export async function loadSite(db: Database, appId: string, number: number, isPublic: boolean): Promise<Site | null> {
  const [version] = await db
    .select({ config: versions.config })
    .from(versions)
    .where(and(eq(versions.appId, appId), eq(versions.number, number)))
    .limit(1);
  if (!version) return null;
  const rows: FileRow[] = await db
    .select({
      path: versionFiles.path,
      sha256: versionFiles.sha256,
      size: versionFiles.size,
      contentType: versionFiles.contentType,
    })
    .from(versionFiles)
    .where(and(eq(versionFiles.appId, appId), eq(versionFiles.version, number)));
  return buildSite(number, version.config, rows, isPublic);
}

export function buildSite(version: number, config: Record<string, unknown>, rows: FileRow[], isPublic: boolean): Site {
  const files = new Map<string, SiteFile>();
  for (const row of rows) files.set(row.path, siteFile(row, isPublic));
  const named = typeof config.notFound === "string" ? config.notFound.replace(/^\/+/, "") : null;
  return {
    version,
    spa: config.spa === true,
    notFound: (named ? files.get(named) : undefined) ?? files.get("404.html") ?? null,
    files,
    collections: new Map(
      Object.entries((config.collections ?? {}) as Record<string, CollectionRules>).map(([name, rules]) => [
        name,
        collectionRules(rules),
      ]),
    ),
    buckets: new Map(
      Object.entries((config.buckets ?? {}) as Record<string, BucketRules>).map(([name, rules]) => [
        name,
        bucketRules(rules),
      ]),
    ),
    server: typeof config.server === "string" ? (files.get(config.server) ?? null) : null,
    apis: new Map(
      Object.entries((config.apis ?? {}) as Record<string, ApiDeclaration>).map(([name, api]) => [name, apiRule(api)]),
    ),
  };
}

function siteFile(row: FileRow, isPublic: boolean): SiteFile {
  const headers = {
    "Content-Type": row.contentType,
    ETag: `"${row.sha256}"`,
    "Cache-Control": cacheControlOf(row.path, row.contentType, isPublic),
    "X-Content-Type-Options": "nosniff",
  };
  return {
    path: row.path,
    sha256: row.sha256,
    size: row.size,
    html: isHtml(row.contentType),
    headers,
    responseHeaders: new Headers(headers),
  };
}
