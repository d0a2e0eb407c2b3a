import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PLAN_TABLE, type Entitlements } from "@hatch/contracts";
import { metrics } from "@hatch/platform";
import { eq } from "drizzle-orm";
import { addDocument, updateDocument } from "../src/data/documents.ts";
import { storedBytes, type StorageLimit } from "../src/data/storage-limit.ts";
import { DataError } from "../src/http/answers.ts";
import { storageEscrow } from "../src/db/schema.ts";
import { openTestContext, type TestContext } from "./support/context.ts";
import { seedApp } from "./support/seed.ts";

// The plan's storage held by escrow (src/data/storage-limit.ts): document adds take their bytes from the account's
// shards without its lock, the limit holds for adds at once and beside patches, and a plan change makes old shares
// grant nothing. On PGlite the adds run one after the other; on TEST_DATABASE_URL's server at once.

const config = { collections: { notes: { read: "anyone", create: "anyone", update: "anyone" } } };

function planWith(accountId: string, storageBytes: number): StorageLimit {
  const pro = PLAN_TABLE.pro;
  const entitlements: Entitlements = {
    accountId,
    plan: pro.plan,
    state: "active",
    seats: 1,
    limits: { ...pro.limits, storageBytes },
    settingsUrl: "https://hatch.test/dashboard/billing",
  };
  return { accountId, entitlements };
}

async function lockOutcomes(): Promise<Record<string, number>> {
  const { values } = await metrics.storageEscrowLocks.get();
  return Object.fromEntries(values.map((value) => [String(value.labels.outcome), value.value]));
}

async function grants(t: TestContext, accountId: string) {
  return t.ctx.db.select().from(storageEscrow).where(eq(storageEscrow.accountId, accountId));
}

describe("the plan's storage in escrow", () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await openTestContext();
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  test("adds at once take their bytes from the escrow: the account's lock counts once; held and granted within the limit", async () => {
    const app = await seedApp(t.ctx, { address: "escrow-many", accountId: "acct_escrow_many", config });
    const key = { appId: app.id, collection: "notes" };
    const storage = planWith(app.accountId, 10_000_000);
    const before = await lockOutcomes();
    const added = await Promise.all(
      Array.from({ length: 120 }, (_, n) => addDocument(t.ctx.db, key, { n, text: "x".repeat(100) }, null, storage)),
    );
    expect(new Set(added.map((document) => document.id)).size).toBe(120);
    // The first add found no shares and counted under the lock (sharing the room out); every other add was granted.
    expect((await lockOutcomes()).counted! - (before.counted ?? 0)).toBe(1);
    const held = await storedBytes(t.ctx.db, app.accountId);
    expect(held).toBe(added.reduce((sum, document) => sum + JSON.stringify(document.data).length, 0));
    const rows = await grants(t, app.accountId);
    expect(rows).toHaveLength(16);
    const open = rows.reduce((sum, row) => sum + (row.allowed - row.used), 0);
    expect(rows.every((row) => row.used <= row.allowed && row.limitBytes === 10_000_000)).toBe(true);
    expect(held + open).toBeLessThanOrEqual(10_000_000);
  }, 60_000);

  test("near the limit, adds at once store exactly what fits; a patch beside them takes the escrow's room back", async () => {
    const app = await seedApp(t.ctx, { address: "escrow-full", accountId: "acct_escrow_full", config });
    const key = { appId: app.id, collection: "notes" };
    const fields = { text: "y".repeat(990) };
    const size = JSON.stringify(fields).length;
    const storage = planWith(app.accountId, 30 * size + 10);
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, () =>
        addDocument(t.ctx.db, key, fields, null, storage).then(
          (document) => document.id,
          (error: unknown) => (error instanceof DataError ? error.code : String(error)),
        ),
      ),
    );
    expect(outcomes.filter((outcome) => outcome === "needs_payment")).toHaveLength(20);
    expect(await storedBytes(t.ctx.db, app.accountId)).toBe(30 * size);
    // 10 bytes are left, granted or not: a patch of 9 fits once the escrow gives them back, one of 11 does not.
    const id = outcomes.find((outcome) => outcome !== "needs_payment")!;
    const grown = await updateDocument(t.ctx.db, key, id, { a: 1 }, null, storage);
    expect(typeof grown === "object" && grown.id).toBe(id);
    const refused = await updateDocument(t.ctx.db, key, id, { b: "123" }, null, storage).catch(
      (error: unknown) => error,
    );
    expect((refused as DataError).code).toBe("needs_payment");
  }, 60_000);

  test("a plan change: shares made under the old limit grant nothing; the next add counts under the new one", async () => {
    const app = await seedApp(t.ctx, { address: "escrow-plan", accountId: "acct_escrow_plan", config });
    const key = { appId: app.id, collection: "notes" };
    const fields = { text: "z".repeat(490) };
    const size = JSON.stringify(fields).length;
    await addDocument(t.ctx.db, key, fields, null, planWith(app.accountId, 1_000_000));
    expect((await grants(t, app.accountId)).every((row) => row.limitBytes === 1_000_000)).toBe(true);
    // Downgraded to room for two documents: the old shares (about 500 KB) must not let a third in.
    const smaller = planWith(app.accountId, 2 * size);
    await addDocument(t.ctx.db, key, fields, null, smaller);
    expect((await grants(t, app.accountId)).every((row) => row.limitBytes === 2 * size)).toBe(true);
    const third = await addDocument(t.ctx.db, key, fields, null, smaller).catch((error: unknown) => error);
    expect((third as DataError).code).toBe("needs_payment");
    expect(await storedBytes(t.ctx.db, app.accountId)).toBe(2 * size);
  }, 60_000);
});
