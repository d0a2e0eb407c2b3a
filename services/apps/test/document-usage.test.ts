import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { DATA_LIMITS } from "../src/spec/data-rules.ts";
import { metrics, type Database } from "@hatch/platform";
import { eq, sql } from "drizzle-orm";
import { addDocument, removeDocument } from "../src/data/documents.ts";
import { documentsHeld, USAGE_SHARDS } from "../src/data/document-usage.ts";
import { storedBytes } from "../src/data/storage-limit.ts";
import { DataError } from "../src/http/answers.ts";
import { documentUsage } from "../src/db/schema.ts";
import { appsDatabaseBefore, type DatabaseBefore } from "./support/migrations.ts";
import { openTestContext, type TestContext } from "./support/context.ts";
import { seedApp } from "./support/seed.ts";

// Documents counted in shards with escrow (src/data/document-usage.ts): adds at once all counted, the per-app limit
// held by adds at once, and migration 0009 carrying each app's counts over from data_usage. On PGlite the adds run one
// after the other on its one connection; on TEST_DATABASE_URL's server they run on the pool's connections at once.

const MAX = DATA_LIMITS.maxDocumentsPerApp;
const config = { collections: { notes: { read: "anyone", create: "anyone", delete: "anyone" } } };

async function shards(db: Database, appId: string) {
  return db.select().from(documentUsage).where(eq(documentUsage.appId, appId)).orderBy(documentUsage.shard);
}

/** What the escrow promises: no shard past its allowance, and the allowances together within the limit. */
async function expectEscrowHolds(db: Database, appId: string): Promise<void> {
  const rows = await shards(db, appId);
  expect(rows.filter((row) => row.documents > row.allowed)).toEqual([]);
  expect(rows.reduce((sum, row) => sum + row.allowed, 0)).toBeLessThanOrEqual(MAX);
  expect(rows.every((row) => row.shard >= 0 && row.shard < USAGE_SHARDS)).toBe(true);
}

describe("document usage in shards", () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await openTestContext();
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  test("adds at once are all counted, documents and bytes, within each shard's allowance", async () => {
    const app = await seedApp(t.ctx, { address: "many", accountId: "acct_many", config });
    const key = { appId: app.id, collection: "notes" };
    const added = await Promise.all(Array.from({ length: 60 }, (_, n) => addDocument(t.ctx.db, key, { n }, null)));
    expect(new Set(added.map((document) => document.id)).size).toBe(60);
    expect(await documentsHeld(t.ctx.db, app.id)).toBe(60);
    const bytes = added.reduce((sum, document) => sum + JSON.stringify(document.data).length, 0);
    expect(await storedBytes(t.ctx.db, app.accountId)).toBe(bytes);
    await expectEscrowHolds(t.ctx.db, app.id);
    // Removals at once count off, whichever shard they land on.
    await Promise.all(added.slice(0, 25).map((document) => removeDocument(t.ctx.db, key, document.id, null)));
    expect(await documentsHeld(t.ctx.db, app.id)).toBe(35);
    await expectEscrowHolds(t.ctx.db, app.id);
  }, 60_000);

  test("adds at once share the app's room out once; the adds that found every shard busy meanwhile add without sharing", async () => {
    const app = await seedApp(t.ctx, { address: "burst", config });
    const key = { appId: app.id, collection: "notes" };
    const shared = async () =>
      (await metrics.documentUsageShares.get()).values.find((value) => value.labels.outcome === "shared")?.value ?? 0;
    const before = await shared();
    // The app has no shards yet, so the first adds at once all find none and queue for the app's usage lock.
    await Promise.all(Array.from({ length: 200 }, (_, n) => addDocument(t.ctx.db, key, { n }, null)));
    expect(await documentsHeld(t.ctx.db, app.id)).toBe(200);
    // Only the first shared the room out (locking every shard); the others found room once it had and locked no shard
    // to look, so no add after them found every shard busy and shared again.
    expect((await shared()) - before).toBe(1);
    await expectEscrowHolds(t.ctx.db, app.id);
  }, 60_000);

  test("adds at once near the limit: exactly the room left is added, the rest refused and not written", async () => {
    const app = await seedApp(t.ctx, { address: "nearly", config });
    const key = { appId: app.id, collection: "notes" };
    const room = 3;
    // As the migration carries counts over: one shard holding them, with no room of its own.
    await t.ctx.db
      .insert(documentUsage)
      .values({ appId: app.id, shard: 0, documents: MAX - room, allowed: MAX - room });
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, n) =>
        addDocument(t.ctx.db, key, { n }, null).then(
          () => "added",
          (error: unknown) => (error instanceof DataError ? error.code : String(error)),
        ),
      ),
    );
    expect(outcomes.filter((outcome) => outcome === "added")).toHaveLength(room);
    expect(outcomes.filter((outcome) => outcome === "limit_exceeded")).toHaveLength(20 - room);
    expect(await documentsHeld(t.ctx.db, app.id)).toBe(MAX);
    const [written] = await t.ctx.db
      .execute(sql`select count(*)::int as n from apps.documents where app_id = ${app.id}`)
      .then((result) => (Array.isArray(result) ? result : (result as { rows: { n: number }[] }).rows));
    expect(Number((written as { n: number }).n)).toBe(room);
    await expectEscrowHolds(t.ctx.db, app.id);
  }, 60_000);
});

describe("migration 0009: document counts carried over from data_usage", () => {
  let migrated: DatabaseBefore | undefined;
  afterAll(async () => {
    await migrated?.close();
  });

  test("each app's documents and bytes are its shards' sums; the next add shares the room out and counts on", async () => {
    migrated = await appsDatabaseBefore("0009_document_usage");
    const { old } = migrated;
    for (const id of ["app_one", "app_two", "app_three"]) {
      const address = id.replace("_", "-");
      await old.execute(sql`insert into apps.addresses (address, app_id) values (${address}, ${id})`);
      await old.execute(sql`insert into apps.apps (id, address, name, account_id, owner_id, owner_email, owner_name,
        visibility) values (${id}, ${address}, ${id}, 'acc_1', 'usr_1', 'owner@example.com', 'Owner', 'public')`);
    }
    // app_one holds documents and a file, app_two only files, app_three nothing counted yet.
    await old.execute(sql`insert into apps.data_usage (app_id, documents, document_bytes, files, file_bytes)
      values ('app_one', 5, 500, 1, 10), ('app_two', 0, 0, 2, 20)`);

    const db = await migrated.upgrade();
    expect((await db.select().from(documentUsage).orderBy(documentUsage.appId)).map((row) => ({ ...row }))).toEqual([
      { appId: "app_one", shard: 0, documents: 5, bytes: 500, allowed: 5 },
    ]);
    expect(await documentsHeld(db, "app_one")).toBe(5);
    expect(await storedBytes(db, "acc_1")).toBe(530);

    const added = await addDocument(db, { appId: "app_one", collection: "notes" }, { title: "after" }, null);
    expect(await documentsHeld(db, "app_one")).toBe(6);
    expect(await storedBytes(db, "acc_1")).toBe(530 + JSON.stringify(added.data).length);
    const rows = await shards(db, "app_one");
    expect(rows).toHaveLength(USAGE_SHARDS);
    expect(rows.reduce((sum, row) => sum + row.allowed, 0)).toBe(MAX);
    await addDocument(db, { appId: "app_three", collection: "notes" }, { title: "first" }, null);
    expect(await documentsHeld(db, "app_three")).toBe(1);
  }, 60_000);
});
