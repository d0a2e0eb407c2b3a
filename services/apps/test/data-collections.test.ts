import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { DATA_LIMITS } from "../src/spec/data-rules.ts";
import { appsTable, documents, documentUsage } from "../src/db/schema.ts";
import { documentsHeld } from "../src/data/document-usage.ts";
import { allBy, DataClient, member, ownerSeed } from "./support/collections.ts";
import { startTestHost, type TestHost } from "./support/host.ts";
import { seedApp, seedVersion, type SeededApp } from "./support/seed.ts";

// Collections over real HTTP: add, get, update, remove, what a document looks like, bad bodies, sizes and limits.

const files = { "index.html": "<h1>Todos</h1>" };
const config = { collections: { todos: allBy("anyone"), notes: allBy("owner") } };

describe("app data: documents of a collection", () => {
  let t: TestHost;
  let db: DataClient;
  let app: SeededApp;
  beforeAll(async () => {
    t = await startTestHost();
    db = new DataClient(t);
    app = await seedApp(t.ctx, { ...ownerSeed, address: "todo", files, config });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  async function usage(appId: string): Promise<number> {
    return documentsHeld(t.ctx.db, appId);
  }

  async function stored(appId: string, collection = "todos"): Promise<number> {
    return (
      await t.ctx.db
        .select({ id: documents.id })
        .from(documents)
        .where(and(eq(documents.appId, appId), eq(documents.collection, collection)))
    ).length;
  }

  test("add answers 201 with the document: id, times, the creator's email, then the fields", async () => {
    const before = await usage(app.id);
    const added = await db.add(
      "todo",
      "todos",
      { title: "Milk", done: false, tags: ["shop"], nested: { "any key": 1 } },
      member,
    );
    expect(added.status).toBe(201);
    const doc = added.body;
    // Meta keys first; the fields follow in jsonb's own key order.
    expect(Object.keys(doc).slice(0, 4)).toEqual(["id", "createdAt", "updatedAt", "createdBy"]);
    expect(Object.keys(doc).slice(4).sort()).toEqual(["done", "nested", "tags", "title"]);
    expect(doc).toMatchObject({
      createdBy: member.email,
      title: "Milk",
      done: false,
      tags: ["shop"],
      nested: { "any key": 1 },
    });
    expect(doc.id).toMatch(/^[A-Za-z0-9-][A-Za-z0-9_-]{15}$/);
    expect(doc.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(doc.updatedAt).toBe(doc.createdAt);
    expect(added.headers.get("content-type")).toStartWith("application/json");
    expect(await usage(app.id)).toBe(before + 1);
    const read = await db.read("todo", "todos", doc.id, null);
    expect(read).toMatchObject({ status: 200, body: doc });
  });

  test("an anonymous add has createdBy null", async () => {
    const added = await db.add("todo", "todos", { title: "anon" }, null);
    expect(added.status).toBe(201);
    expect(added.body.createdBy).toBeNull();
  });

  test("meta keys in a body are ignored: a document read back can be written back", async () => {
    const added = await db.add(
      "todo",
      "todos",
      { title: "x", id: "mine", createdAt: "1999-01-01T00:00:00.000Z", updatedAt: "x", createdBy: "boss@example.com" },
      member,
    );
    expect(added.status).toBe(201);
    expect(added.body.id).not.toBe("mine");
    expect(added.body.createdBy).toBe(member.email);
    expect(added.body.createdAt).not.toStartWith("1999");
    const [row] = await t.ctx.db
      .select({ data: documents.data })
      .from(documents)
      .where(eq(documents.id, added.body.id));
    expect(row!.data).toEqual({ title: "x" });
    const back = await db.update("todo", "todos", added.body.id, { ...added.body, done: true, id: "other" }, member);
    expect(back.status).toBe(200);
    expect(back.body).toMatchObject({
      id: added.body.id,
      title: "x",
      done: true,
      createdBy: member.email,
      createdAt: added.body.createdAt,
    });
  });

  test("update merges the given fields into the document and moves updatedAt", async () => {
    const { body: doc } = await db.add("todo", "todos", { title: "Eggs", done: false, count: 2 });
    const updated = await db.update("todo", "todos", doc.id, { done: true, note: null });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({
      id: doc.id,
      title: "Eggs",
      done: true,
      count: 2,
      note: null,
      createdAt: doc.createdAt,
    });
    expect(Date.parse(updated.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(doc.updatedAt));
    expect((await db.read("todo", "todos", doc.id)).body).toEqual(updated.body);
  });

  test("remove answers { id, removed: true }; the document is gone and counted off", async () => {
    const { body: doc } = await db.add("todo", "todos", { title: "Bread" });
    const before = await usage(app.id);
    const removed = await db.remove("todo", "todos", doc.id);
    expect(removed).toMatchObject({ status: 200, body: { id: doc.id, removed: true } });
    expect(await usage(app.id)).toBe(before - 1);
    for (const again of [
      await db.read("todo", "todos", doc.id),
      await db.remove("todo", "todos", doc.id),
      await db.update("todo", "todos", doc.id, { a: 1 }),
    ]) {
      expect(again.status).toBe(404);
      expect(again.body.error).toEqual({
        code: "not_found",
        message: `There is no document "${doc.id}" in todos. It may have been removed.`,
      });
    }
    expect(await usage(app.id)).toBe(before - 1);
  });

  test("an unknown collection is not_found naming the declared ones; an app without collections says how to declare them", async () => {
    const unknown = await db.list("todo", "todoz");
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe("not_found");
    expect(unknown.body.error.message).toBe(
      'This app has no collection "todoz"; its service.json declares "notes", "todos".',
    );
    const added = await db.add("todo", "todoz", { a: 1 });
    expect(added.status).toBe(404);
    await seedApp(t.ctx, { ...ownerSeed, address: "bare", files });
    const bare = await db.list("bare", "todos");
    expect(bare.status).toBe(404);
    expect(bare.body.error.message).toContain('add "collections" to its service.json');
    await seedApp(t.ctx, { ...ownerSeed, address: "unpublished" });
    expect((await db.list("unpublished", "todos")).status).toBe(404);
  });

  test("odd paths and methods: a bad id or extra segment is not_found, other methods 405", async () => {
    expect((await db.read("todo", "todos", "_changesx")).status).toBe(404);
    expect((await db.call("todo", "/_hatch/db/todos/abc/def")).status).toBe(404);
    expect((await db.call("todo", "/_hatch/db/todos/a%20b")).status).toBe(404);
    expect((await db.call("todo", "/_hatch/db/")).status).toBe(404);
    const put = await db.call("todo", "/_hatch/db/todos", { method: "PUT", body: {} });
    expect(put.status).toBe(405);
    expect(put.headers.get("allow")).toBe("GET, POST");
    const post = await db.call("todo", "/_hatch/db/todos/abc", { method: "POST", body: {} });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, PATCH, DELETE");
    expect((await db.call("todo", "/_hatch/db/todos/_changes", { method: "POST", body: {} })).status).toBe(405);
  });

  test("a body that is not JSON, or not an object, is invalid and writes nothing", async () => {
    const before = await stored(app.id);
    const cases: [string, string][] = [
      ["{not json", "The body is not JSON"],
      ["", "The body is not JSON"],
      ["[1,2]", "A document is a JSON object"],
      ['"text"', "A document is a JSON object"],
      ["42", "A document is a JSON object"],
      ["null", "A document is a JSON object"],
    ];
    for (const [raw, message] of cases) {
      const answer = await db.call("todo", "/_hatch/db/todos", { method: "POST", raw });
      expect({ raw, status: answer.status, code: answer.body.error.code }).toEqual({
        raw,
        status: 400,
        code: "invalid",
      });
      expect(answer.body.error.message).toStartWith(message);
    }
    const invalidUtf8 = await db.call("todo", "/_hatch/db/todos", {
      method: "POST",
      raw: new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]),
    });
    expect(invalidUtf8.status).toBe(400);
    const { body: doc } = await db.add("todo", "todos", { title: "keep" });
    const patch = await db.call("todo", `/_hatch/db/todos/${doc.id}`, { method: "PATCH", raw: "[]" });
    expect(patch.status).toBe(400);
    expect((await db.read("todo", "todos", doc.id)).body).toEqual(doc);
    expect(await stored(app.id)).toBe(before + 1);
  });

  test("field names must be simple top-level names; text must be storable; nesting is bounded", async () => {
    const before = await stored(app.id);
    for (const doc of [{ "bad name": 1 }, { "1st": 1 }, { "a.b": 1 }, { ["x".repeat(65)]: 1 }]) {
      const answer = await db.add("todo", "todos", doc);
      expect(answer.status).toBe(400);
      expect(answer.body.error.message).toContain("cannot be used");
    }
    for (const raw of ['{"t":"a\\u0000b"}', '{"t":"\\ud800"}', '{"t":{"\\u0000":1}}']) {
      const answer = await db.call("todo", "/_hatch/db/todos", { method: "POST", raw });
      expect(answer.status).toBe(400);
      expect(answer.body.error.message).toContain("NUL characters or broken Unicode");
    }
    const deep = await db.call("todo", "/_hatch/db/todos", {
      method: "POST",
      raw: `{"t":${"[".repeat(100)}${"]".repeat(100)}}`,
    });
    expect(deep.status).toBe(400);
    expect(deep.body.error.message).toContain("64 levels");
    expect(await stored(app.id)).toBe(before);
    const proto = await db.call("todo", "/_hatch/db/todos", {
      method: "POST",
      raw: '{"__proto__": {"x": 1}, "ok": true}',
    });
    expect(proto.status).toBe(201);
    // A field called __proto__ stays a field (no prototype games on the server).
    expect(Object.getOwnPropertyDescriptor(proto.body, "__proto__")?.value).toEqual({ x: 1 });
    expect(proto.body.ok).toBe(true);
  });

  test("a document over 64 KB is too_large and nothing is written; exactly the limit is fine", async () => {
    const before = await stored(app.id);
    const usageBefore = await usage(app.id);
    const overhead = JSON.stringify({ text: "" }).length;
    const over = await db.add("todo", "todos", { text: "x".repeat(DATA_LIMITS.maxDocumentBytes - overhead + 1) });
    expect(over.status).toBe(413);
    expect(over.body.error.code).toBe("too_large");
    expect(over.body.error.message).toContain(`at most ${DATA_LIMITS.maxDocumentBytes} bytes`);
    const huge = await db.call("todo", "/_hatch/db/todos", {
      method: "POST",
      raw: JSON.stringify({ text: "x".repeat(1024 * 1024) }),
    });
    expect(huge.status).toBe(413);
    expect(await stored(app.id)).toBe(before);
    expect(await usage(app.id)).toBe(usageBefore);
    const exact = await db.add("todo", "todos", { text: "é".repeat((DATA_LIMITS.maxDocumentBytes - overhead) / 2) });
    expect(exact.status).toBe(201);
    // An update that would make the document too big leaves it as it was.
    const grown = await db.update("todo", "todos", exact.body.id, { more: "x" });
    expect(grown.status).toBe(413);
    expect((await db.read("todo", "todos", exact.body.id)).body).toEqual(exact.body);
  });

  test("the per-app document limit: the add past it is limit_exceeded and writes nothing; a removal makes room", async () => {
    const full = await seedApp(t.ctx, { ...ownerSeed, address: "full", files, config });
    const { body: first } = await db.add("full", "todos", { n: 1 });
    // As if the app held the most documents already (instead of adding 100,000).
    await t.ctx.db.delete(documentUsage).where(eq(documentUsage.appId, full.id));
    await t.ctx.db.insert(documentUsage).values({
      appId: full.id,
      shard: 0,
      documents: DATA_LIMITS.maxDocumentsPerApp,
      allowed: DATA_LIMITS.maxDocumentsPerApp,
    });
    const refused = await db.add("full", "todos", { n: 2 });
    expect(refused.status).toBe(429);
    expect(refused.body.error).toEqual({
      code: "limit_exceeded",
      message: `This app holds ${DATA_LIMITS.maxDocumentsPerApp} documents (all collections together), the most it may. Remove documents it no longer needs before adding more.`,
    });
    expect(await stored(full.id)).toBe(1);
    expect(await usage(full.id)).toBe(DATA_LIMITS.maxDocumentsPerApp);
    expect((await db.add("full", "notes", { n: 3 })).status).toBe(429);
    expect((await db.remove("full", "todos", first.id)).status).toBe(200);
    expect((await db.add("full", "todos", { n: 4 })).status).toBe(201);
    expect((await db.add("full", "todos", { n: 5 })).status).toBe(429);
  });

  test("adds at the same time are all counted", async () => {
    const busy = await seedApp(t.ctx, { ...ownerSeed, address: "busy", files, config });
    const answers = await Promise.all(Array.from({ length: 20 }, (_, n) => db.add("busy", "todos", { n })));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(201));
    expect(await usage(busy.id)).toBe(20);
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(20);
  });

  test("a new version keeps the documents; deleting the app deletes them", async () => {
    const gone = await seedApp(t.ctx, { ...ownerSeed, address: "gone", files, config });
    const { body: doc } = await db.add("gone", "todos", { title: "stays" });
    await db.add("gone", "notes", { title: "too" });
    expect(await stored(gone.id)).toBe(1);
    await seedVersion(t.ctx, gone.id, { "index.html": "<h1>v2</h1>" }, config);
    t.host.invalidate("gone");
    expect((await db.read("gone", "todos", doc.id)).body).toEqual(doc);
    await t.ctx.db.delete(appsTable).where(eq(appsTable.id, gone.id));
    expect(await stored(gone.id)).toBe(0);
    expect(await stored(gone.id, "notes")).toBe(0);
    expect(await usage(gone.id)).toBe(0);
    t.host.invalidate("gone");
    expect((await db.read("gone", "todos", doc.id)).status).toBe(404);
  });
});
