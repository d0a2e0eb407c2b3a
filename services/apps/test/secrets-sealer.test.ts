import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { eq } from "drizzle-orm";
import { aiKeys, secrets } from "../src/db/schema.ts";
import { resealStaleRows } from "../src/secrets/rotate.ts";
import { aiKeyAad, secretAad, Sealer } from "../src/secrets/sealed.ts";
import { openSecret } from "../src/secrets/store.ts";
import { openTestContext, type TestContext } from "./support/context.ts";
import { seedApp } from "./support/seed.ts";

const key = (id: string) => ({ id, key: randomBytes(32) });

describe("Sealer", () => {
  const a = key("a");
  const b = key("b");

  test("round trip; every sealing differs (fresh IV); the key id is stored", () => {
    const sealer = new Sealer([a]);
    const one = sealer.seal("sk-live-123", "secret:app1:KEY");
    const two = sealer.seal("sk-live-123", "secret:app1:KEY");
    expect(one.keyId).toBe("a");
    expect(one.sealed).not.toBe(two.sealed);
    expect(one.sealed).not.toContain("sk-live-123");
    expect(sealer.open(one, "secret:app1:KEY")).toBe("sk-live-123");
    expect(sealer.open(two, "secret:app1:KEY")).toBe("sk-live-123");
  });

  test("a changed byte, another row's associated data or an unknown key id does not open", () => {
    const sealer = new Sealer([a]);
    const sealed = sealer.seal("value", secretAad("app1", "KEY"));
    const raw = Buffer.from(sealed.sealed, "base64url");
    for (const at of [0, 12, 28, raw.length - 1]) {
      const bad = Buffer.from(raw);
      bad[at] = bad[at]! ^ 1;
      expect(() => sealer.open({ keyId: "a", sealed: bad.toString("base64url") }, secretAad("app1", "KEY"))).toThrow();
    }
    expect(() => sealer.open(sealed, secretAad("app2", "KEY"))).toThrow();
    expect(() => sealer.open(sealed, secretAad("app1", "OTHER"))).toThrow();
    expect(() => sealer.open({ ...sealed, keyId: "zzz" }, secretAad("app1", "KEY"))).toThrow(
      /no sealing key with id zzz/,
    );
    // The same id with another key: the tag does not match.
    expect(() => new Sealer([{ id: "a", key: b.key }]).open(sealed, secretAad("app1", "KEY"))).toThrow();
  });

  test("after a rotation the new key seals and the old one still opens", () => {
    const old = new Sealer([a]).seal("value", "x");
    const rotated = new Sealer([b, a]);
    expect(rotated.currentKeyId).toBe("b");
    expect(rotated.open(old, "x")).toBe("value");
    expect(rotated.seal("value", "x").keyId).toBe("b");
  });

  test("bad keys are refused at construction", () => {
    expect(() => new Sealer([])).toThrow();
    expect(() => new Sealer([{ id: "short", key: randomBytes(16) }])).toThrow(/32 bytes/);
  });
});

describe("re-sealing at start (rotation)", () => {
  let test_: TestContext;
  const lines: string[] = [];
  beforeAll(async () => {
    test_ = await openTestContext({ logWrite: (line) => lines.push(line) });
  }, 60_000);
  afterAll(async () => {
    await test_?.close();
  });

  test("rows under an old key are re-sealed in batches; rows under a dropped key are counted and left; nothing logs a value", async () => {
    const { ctx } = test_;
    const oldKey = key("old");
    const newKey = key("new");
    const lost = key("lost");
    const before = new Sealer([oldKey]);
    const apps = await Promise.all([1, 2, 3].map(() => seedApp(ctx)));
    const rows: { appId: string; name: string; value: string; sealer: Sealer }[] = [];
    for (const [i, app] of apps.entries()) {
      for (const name of ["A_KEY", "B_KEY"])
        rows.push({
          appId: app.id,
          name,
          value: `value-${i}-${name}-${randomBytes(6).toString("hex")}`,
          sealer: before,
        });
    }
    rows.push({ appId: apps[0]!.id, name: "LOST", value: "lost-value-never-logged", sealer: new Sealer([lost]) });
    rows.push({ appId: apps[1]!.id, name: "ALREADY", value: "current-value", sealer: new Sealer([newKey]) });
    for (const row of rows) {
      await ctx.db.insert(secrets).values({
        appId: row.appId,
        name: row.name,
        ...row.sealer.seal(row.value, secretAad(row.appId, row.name)),
        updatedBy: "u",
        updatedByEmail: "u@example.com",
      });
    }
    await ctx.db.insert(aiKeys).values({
      id: "k1",
      scope: "mine",
      ownerId: "user1",
      provider: "openai",
      ...before.seal("sk-ai-secret", aiKeyAad("mine", "user1", "openai")),
      addedBy: "user1",
      addedByEmail: "u@example.com",
    });

    const sealer = new Sealer([newKey, oldKey]);
    const counts = await resealStaleRows({ db: ctx.db, sealer }, ctx.logger, 2);
    expect(counts).toEqual({ secrets: { resealed: 6, failed: 1 }, aiKeys: { resealed: 1, failed: 0 } });

    const stored = await ctx.db.select().from(secrets);
    for (const row of rows.filter((r) => r.name !== "LOST")) {
      const found = stored.find((s) => s.appId === row.appId && s.name === row.name)!;
      expect([row.name, found.keyId]).toEqual([row.name, "new"]);
      // Only the new key is needed now.
      expect(await openSecret({ db: ctx.db, sealer: new Sealer([newKey]) }, row.appId, row.name)).toBe(row.value);
    }
    expect(stored.find((s) => s.name === "LOST")!.keyId).toBe("lost");
    const [aiKey] = await ctx.db.select().from(aiKeys).where(eq(aiKeys.id, "k1"));
    expect(aiKey!.keyId).toBe("new");
    expect(new Sealer([newKey]).open(aiKey!, aiKeyAad("mine", "user1", "openai"))).toBe("sk-ai-secret");

    // A second start finds only the row it cannot open.
    expect(await resealStaleRows({ db: ctx.db, sealer }, ctx.logger, 2)).toEqual({
      secrets: { resealed: 0, failed: 1 },
      aiKeys: { resealed: 0, failed: 0 },
    });
    const log = lines.join("\n");
    expect(log).toContain("re-sealed secrets and AI keys under the current key");
    expect(log).toContain('"secretsFailed":1');
    for (const row of rows) expect(log).not.toContain(row.value);
    expect(log).not.toContain("sk-ai-secret");
  });
});
