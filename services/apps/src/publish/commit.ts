import { consumeConfirm, type Database } from "@hatch/platform";
import { randomId, ToolError, type CallContext, type ConfirmClaims, type Visibility } from "@hatch/contracts";
import { type ServiceJson } from "../spec/service-json.ts";
import { eq, sql, type SQL } from "drizzle-orm";
import { requireOwnedApp, type AppRow } from "../apps-repo.ts";
import type { AppsContext } from "../context.ts";
import { addresses, appsTable, blobs, confirmUses, versionFiles, versions } from "../db/schema.ts";
import { appEvent } from "../events.ts";
import { checkAppLimitLocked } from "./account.ts";
import type { FolderEntry } from "./folder.ts";

/** Rows per statement when a version's files are written or its blobs locked. */
const CHUNK = 5000;
/** Separates values in one text parameter: paths and content types never hold control characters (checkFolder). */
const SEPARATOR = "\u001f";

/**
 * A list of texts as one parameter, unpacked by Postgres (`string_to_array`): thousands of rows cost one bound
 * value instead of one per row and column, which the embedded database handles far faster.
 */
export function textList(values: readonly string[]): SQL {
  return sql`string_to_array(${values.join(SEPARATOR)}, ${SEPARATOR})`;
}

export type Tx = Parameters<Parameters<Database["transaction"]>[0]>[0];

export type VersionTarget =
  | { kind: "existing"; address: string; expectedVersion?: number }
  | { kind: "new"; name: string; visibility: Visibility; account: string };

export interface CommittedVersion {
  app: AppRow;
  version: number;
  created: boolean;
}

/**
 * Creates the version (and the app, when new) and makes it current, in one transaction. Every blob must
 * already be stored; they are locked so a concurrent delete cannot drop one this version points at. A new app is
 * counted against the account's plan in the same transaction (under the account's lock).
 */
export async function commitVersion(
  apps: Pick<AppsContext, "db" | "entitlements">,
  ctx: CallContext,
  target: VersionTarget,
  entries: readonly FolderEntry[],
  config: ServiceJson,
  confirmation?: ConfirmClaims,
  /** Runs first in the transaction: spends a folder upload, stores the blobs a tar brought (publish/folder-upload.ts). */
  before?: (tx: Tx) => Promise<void>,
): Promise<CommittedVersion> {
  // Read before the transaction: billing may share the embedded database connection the transaction holds.
  const entitlements = target.kind === "new" ? ((await apps.entitlements?.get(target.account)) ?? null) : null;
  return apps.db.transaction(async (tx) => {
    // First, so every lock this transaction takes comes after the account's (and a refusal changes nothing).
    if (target.kind === "new") await checkAppLimitLocked(tx, entitlements, target.account);
    // The user's answer (e.g. to making a new app public) is spent with the change, so it cannot be replayed.
    if (confirmation) await consumeConfirm(tx, confirmUses, confirmation);
    await before?.(tx);
    await lockBlobs(tx, entries);
    const { app, created } =
      target.kind === "new"
        ? { app: await createApp(tx, ctx, target), created: true }
        : { app: await lockForPublish(tx, ctx, target), created: false };
    const version = app.lastVersion + 1;
    await tx.insert(versions).values({
      appId: app.id,
      number: version,
      publishedBy: ctx.sub,
      publisherEmail: ctx.email,
      publisherClient: { kind: ctx.client.kind, name: ctx.client.name },
      fileCount: entries.length,
      totalBytes: entries.reduce((sum, e) => sum + e.size, 0),
      config: config as Record<string, unknown>,
    });
    for (let i = 0; i < entries.length; i += CHUNK) {
      const rows = entries.slice(i, i + CHUNK);
      await tx.execute(sql`
        insert into ${versionFiles} (app_id, version, path, sha256, size, content_type)
        select ${app.id}, ${version}, f.path, f.sha256, f.size::bigint, f.content_type
        from unnest(${textList(rows.map((e) => e.path))}, ${textList(rows.map((e) => e.sha256))}, ${textList(rows.map((e) => String(e.size)))}, ${textList(rows.map((e) => e.contentType))})
          as f(path, sha256, size, content_type)`);
    }
    const [updated] = await tx
      .update(appsTable)
      .set({ currentVersion: version, lastVersion: version, updatedAt: new Date() })
      .where(eq(appsTable.id, app.id))
      .returning();
    await appEvent(tx, ctx, "published", app, {
      summary: created ? `version ${version} (new app)` : `version ${version}`,
      version,
      files: entries.length,
      created,
    });
    return { app: updated!, version, created };
  });
}

async function lockBlobs(tx: Tx, entries: readonly FolderEntry[]): Promise<void> {
  const wanted = [...new Set(entries.map((e) => e.sha256))];
  let found = 0;
  for (let i = 0; i < wanted.length; i += CHUNK) {
    const rows = await tx
      .select({ sha256: blobs.sha256 })
      .from(blobs)
      .where(sql`${blobs.sha256} = any(${textList(wanted.slice(i, i + CHUNK))})`)
      .for("share");
    found += rows.length;
  }
  if (found !== wanted.length) {
    throw new ToolError(
      "conflict",
      "Some files were removed while this version was being published. Call publish again; it will ask for the missing files.",
    );
  }
}

async function lockForPublish(
  tx: Tx,
  ctx: CallContext,
  target: { address: string; expectedVersion?: number },
): Promise<AppRow> {
  const app = await requireOwnedApp(tx, ctx, target.address, { forUpdate: true });
  if (target.expectedVersion !== undefined && app.currentVersion !== target.expectedVersion) {
    throw new ToolError(
      "conflict",
      `You expected version ${target.expectedVersion} of ${app.address} to be current, but version ${app.currentVersion ?? "none"} is: another publish came first. Nothing was published. Check the app, then publish again with expectedVersion ${app.currentVersion ?? "left out"}.`,
    );
  }
  return app;
}

async function createApp(
  tx: Tx,
  ctx: CallContext,
  target: { name: string; visibility: Visibility; account: string },
): Promise<AppRow> {
  const id = `app_${randomId(12)}`;
  const address = await reserveAddress(tx, id, target.name);
  const [app] = await tx
    .insert(appsTable)
    .values({
      id,
      address,
      name: target.name,
      accountId: target.account,
      ownerId: ctx.sub,
      ownerEmail: ctx.email,
      ownerName: ctx.name,
      visibility: target.visibility,
    })
    .returning();
  return app!;
}

/** The name as a DNS label; taken (even by a deleted app) → `-2`, `-3`, … then a random suffix. */
async function reserveAddress(tx: Tx, appId: string, name: string): Promise<string> {
  const base = addressBase(name);
  const candidates = [base, ...[2, 3, 4, 5, 6, 7, 8, 9].map((n) => `${base}-${n}`)];
  for (let attempt = 0; attempt < 20; attempt++) {
    const address = candidates[attempt] ?? `${base}-${Math.random().toString(36).slice(2, 7)}`;
    const rows = await tx
      .insert(addresses)
      .values({ address, appId })
      .onConflictDoNothing()
      .returning({ address: addresses.address });
    if (rows.length > 0) return address;
  }
  throw new ToolError("conflict", "Hatch could not find a free address for this name. Try a more specific name.");
}

/**
 * A name as an address: lowercase letters and digits, every run of anything else one hyphen. So no address holds `--`:
 * that form is kept for hosts made from an address (a version preview `v<N>--<address>`, host/host-names.ts).
 */
export function addressBase(name: string): string {
  const slug = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 48)
    .replace(/-+$/g, "");
  return slug || "app";
}
