import { afterAll, beforeAll, expect, test } from "bun:test";
import { openEmbeddedPostgres, openServiceDatabase, type Database } from "@hatch/platform";
import type { PGlite } from "@electric-sql/pglite";
import { confirmUses, folderUploads, uploads } from "../src/db/schema.ts";
import { APPS_MIGRATIONS } from "../src/service.ts";
import { sweepExpired } from "../src/sweep.ts";

let pglite: PGlite;
let db: Database;

beforeAll(async () => {
  pglite = await openEmbeddedPostgres();
  db = (
    await openServiceDatabase({ kind: "pglite", client: pglite }, { schema: "apps", migrationsFolder: APPS_MIGRATIONS })
  ).db;
}, 60_000);
afterAll(async () => {
  await pglite?.close();
});

test("the sweep drops expired upload URLs (files and folders) and used confirmations, and keeps live ones", async () => {
  const now = new Date("2026-11-21T12:00:00Z");
  const before = new Date(now.getTime() - 1000);
  const after = new Date(now.getTime() + 60_000);
  const sha256 = "a".repeat(64);
  await db.insert(uploads).values([
    { token: "expired-token-0001", sha256, size: 1, userId: "u1", expiresAt: before },
    { token: "live-token-0000001", sha256, size: 1, userId: "u1", expiresAt: after },
  ]);
  await db.insert(confirmUses).values([
    { id: "old", expiresAt: before },
    { id: "new", expiresAt: after },
  ]);
  const folder = { userId: "u1", kind: "tar" as const, ctx: {}, target: {} };
  await db.insert(folderUploads).values([
    { ...folder, id: "upl_old", token: "old-folder-token-01", expiresAt: before },
    { ...folder, id: "upl_new", token: "new-folder-token-01", expiresAt: after },
  ]);
  expect(await sweepExpired(db, now)).toEqual({ uploads: 1, folders: 1, confirmations: 1 });
  expect((await db.select({ id: folderUploads.id }).from(folderUploads)).map((r) => r.id)).toEqual(["upl_new"]);
  expect((await db.select({ token: uploads.token }).from(uploads)).map((r) => r.token)).toEqual(["live-token-0000001"]);
  expect((await db.select({ id: confirmUses.id }).from(confirmUses)).map((r) => r.id)).toEqual(["new"]);
});
