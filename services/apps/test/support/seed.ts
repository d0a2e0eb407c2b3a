import { createHash, randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import type { AppsContext } from "../../src/context.ts";
import { addresses, appPeople, appsTable, blobs, versionFiles, versions } from "../../src/db/schema.ts";

// Apps written straight into the apps schema and the blob store, the way the publish tool leaves them, for
// tests of the app host (and the bench) before and besides the publish tool itself.

export type SeedContent = string | Uint8Array | { content: string | Uint8Array; contentType: string };

export interface SeedAppOptions {
  address?: string;
  name?: string;
  visibility?: "private" | "org" | "people" | "public";
  owner?: { id: string; email: string; name?: string };
  accountId?: string;
  /** Path → content. Without files the app has no version yet. */
  files?: Record<string, SeedContent>;
  /** The version's parsed service.json. */
  config?: Record<string, unknown>;
  people?: string[];
  paused?: boolean;
}

export interface SeededApp {
  id: string;
  address: string;
  accountId: string;
  ownerId: string;
  version: number | null;
}

type SeedContext = Pick<AppsContext, "db" | "blobs">;

let counter = 0;

export async function seedApp(ctx: SeedContext, options: SeedAppOptions = {}): Promise<SeededApp> {
  const id = `app_${randomUUID()}`;
  const address = options.address ?? `app-${process.pid}-${++counter}`;
  const owner = options.owner ?? { id: `user_${randomUUID()}`, email: `owner-${counter}@example.com` };
  const accountId = options.accountId ?? `acct_${owner.id}`;
  await ctx.db.insert(addresses).values({ address, appId: id });
  await ctx.db.insert(appsTable).values({
    id,
    address,
    name: options.name ?? address,
    accountId,
    ownerId: owner.id,
    ownerEmail: owner.email,
    ownerName: owner.name ?? owner.email,
    visibility: options.visibility ?? "public",
    paused: options.paused ?? false,
  });
  if (options.people?.length) {
    await ctx.db.insert(appPeople).values(options.people.map((email) => ({ appId: id, email: email.toLowerCase() })));
  }
  const version = options.files ? await seedVersion(ctx, id, options.files, options.config) : null;
  return { id, address, accountId, ownerId: owner.id, version };
}

/** A new version with these files, made current (what a publish does). */
export async function seedVersion(
  ctx: SeedContext,
  appId: string,
  files: Record<string, SeedContent>,
  config: Record<string, unknown> = {},
): Promise<number> {
  const [app] = await ctx.db
    .select({ lastVersion: appsTable.lastVersion, ownerId: appsTable.ownerId, ownerEmail: appsTable.ownerEmail })
    .from(appsTable)
    .where(eq(appsTable.id, appId));
  if (!app) throw new Error(`seedVersion: no app ${appId}`);
  const number = app.lastVersion + 1;
  const rows = [];
  let total = 0;
  for (const [path, given] of Object.entries(files)) {
    const { bytes, contentType } = normalize(path, given);
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    await ctx.blobs.put(sha256, bytes);
    await ctx.db.insert(blobs).values({ sha256, size: bytes.byteLength }).onConflictDoNothing();
    rows.push({ appId, version: number, path, sha256, size: bytes.byteLength, contentType });
    total += bytes.byteLength;
  }
  await ctx.db.insert(versions).values({
    appId,
    number,
    publishedBy: app.ownerId,
    publisherEmail: app.ownerEmail,
    fileCount: rows.length,
    totalBytes: total,
    config,
  });
  if (rows.length) await ctx.db.insert(versionFiles).values(rows);
  await ctx.db
    .update(appsTable)
    .set({ currentVersion: number, lastVersion: number, updatedAt: new Date() })
    .where(eq(appsTable.id, appId));
  return number;
}

function normalize(path: string, given: SeedContent): { bytes: Uint8Array; contentType: string } {
  const content = typeof given === "object" && "content" in given ? given.content : given;
  const bytes = typeof content === "string" ? new TextEncoder().encode(content) : content;
  // Bun's own extension table, as a publish would use.
  const contentType = typeof given === "object" && "contentType" in given ? given.contentType : Bun.file(path).type;
  return { bytes, contentType };
}
