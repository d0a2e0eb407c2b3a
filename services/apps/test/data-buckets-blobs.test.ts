import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq, inArray } from "drizzle-orm";
import { forgetUnusedBlobs, registerBlob, removeStoredBlobs } from "../src/blobs/unused.ts";
import { blobs, bucketFiles } from "../src/db/schema.ts";
import { openTestContext, type TestContext } from "./support/context.ts";
import { seedApp } from "./support/seed.ts";
import { sha256Hex } from "./support/buckets.ts";

// The helper that removes content nobody uses (bucket file removal and delete_tool both use it), on the database
// itself: which rows it forgets, and that the store removal after the commit spares content that came back.

describe("unused blobs", () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await openTestContext();
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  /** Content in the store and in `blobs`, as a publish or an upload leaves it. */
  async function stored(text: string): Promise<string> {
    const sha256 = sha256Hex(text);
    await t.ctx.blobs.put(sha256, new TextEncoder().encode(text));
    await t.ctx.db.insert(blobs).values({ sha256, size: text.length }).onConflictDoNothing();
    return sha256;
  }

  test("registerBlob says whether the row is new", async () => {
    const sha256 = sha256Hex("registered");
    expect(await t.ctx.db.transaction((tx) => registerBlob(tx, sha256, 10))).toBe(true);
    expect(await t.ctx.db.transaction((tx) => registerBlob(tx, sha256, 10))).toBe(false);
    expect(await t.ctx.db.select().from(blobs).where(eq(blobs.sha256, sha256))).toHaveLength(1);
  });

  test("forgetUnusedBlobs drops only the rows no version file and no bucket file uses", async () => {
    const app = await seedApp(t.ctx, { files: { "index.html": "used by a version" } });
    const inVersion = sha256Hex("used by a version");
    const inBucket = await stored("used by a bucket file");
    await t.ctx.db.insert(bucketFiles).values({
      id: "file-forget-1",
      appId: app.id,
      bucket: "b",
      name: "n",
      contentType: "text/plain",
      size: 1,
      sha256: inBucket,
    });
    const unused = await stored("used by nothing");
    const gone = await t.ctx.db.transaction((tx) =>
      forgetUnusedBlobs(tx, [inVersion, inBucket, unused, unused, sha256Hex("never stored")]),
    );
    expect(gone).toEqual([unused]);
    const left = await t.ctx.db
      .select({ sha256: blobs.sha256 })
      .from(blobs)
      .where(inArray(blobs.sha256, [inVersion, inBucket, unused]));
    expect(left.map((r) => r.sha256).sort()).toEqual([inVersion, inBucket].sort());
    // Only the rows: the bytes go after the commit.
    expect(await t.ctx.blobs.has(unused)).toBe(true);
  });

  test("removeStoredBlobs removes bytes whose row is gone and spares bytes whose row came back", async () => {
    const forgotten = await stored("forgotten");
    const cameBack = await stored("came back");
    await t.ctx.db.delete(blobs).where(eq(blobs.sha256, forgotten));
    expect(await removeStoredBlobs(t.ctx, [forgotten, cameBack])).toBe(1);
    expect({ forgotten: await t.ctx.blobs.has(forgotten), cameBack: await t.ctx.blobs.has(cameBack) }).toEqual({
      forgotten: false,
      cameBack: true,
    });
  });

  test("a store that fails to remove is logged, never thrown: the change already happened", async () => {
    const sha256 = await stored("stuck");
    await t.ctx.db.delete(blobs).where(eq(blobs.sha256, sha256));
    const warnings: string[] = [];
    const failing = { ...t.ctx.blobs, delete: () => Promise.reject(new Error("store down")) };
    const logger = { ...t.ctx.logger, warn: (msg: string) => void warnings.push(msg) };
    expect(await removeStoredBlobs({ db: t.ctx.db, blobs: failing, logger }, [sha256])).toBe(0);
    expect(warnings).toEqual(["unused blob not removed from the store"]);
  });
});
