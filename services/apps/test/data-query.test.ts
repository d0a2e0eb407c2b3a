import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq, fillPlaceholders, sql } from "drizzle-orm";
import { DATA_LIMITS } from "../src/spec/data-rules.ts";
import { documents } from "../src/db/schema.ts";
import { keptPrepared, listStatement, listStatementValues } from "../src/data/documents.ts";
import { parseListQuery } from "../src/data/query.ts";
import { allBy, DataClient, member, ownerSeed, stranger } from "./support/collections.ts";
import { startTestHost, type TestHost } from "./support/host.ts";
import { seedApp } from "./support/seed.ts";

// list: where (equality, ranges, meta fields), orderBy, limit and cursors, and that Postgres answers the two common
// lists from the indexes.

const files = { "index.html": "<h1>Query</h1>" };
const config = { collections: { items: allBy("anyone"), paged: allBy("anyone"), other: allBy("anyone") } };
type Doc = Record<string, any> & { id: string };

describe("app data: list queries", () => {
  let t: TestHost;
  let db: DataClient;
  const items: Doc[] = [];
  beforeAll(async () => {
    t = await startTestHost();
    db = new DataClient(t);
    await seedApp(t.ctx, { ...ownerSeed, address: "query", files, config });
    const rows = [
      { name: "apple", price: 3, done: false, kind: "fruit" },
      { name: "banana", price: 1, done: true, kind: "fruit" },
      { name: "carrot", price: 2, done: false, kind: "veg", note: null },
      { name: "dates", price: 7, done: false, kind: "fruit" },
      { name: "eggs", price: "6", done: true },
      { name: "figs", price: 10, done: false, kind: "fruit" },
    ];
    // Each a millisecond apart at least: createdAt compares at the millisecond a page sees, and on a fast machine two
    // adds in a row can share one (then "after carrot" rightly leaves out dates).
    for (const [n, row] of rows.entries()) {
      items.push((await db.add("query", "items", row, n % 2 ? member : stranger)).body);
      await Bun.sleep(2);
    }
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  async function names(query: Record<string, unknown>, collection = "items"): Promise<string[]> {
    const answer = await db.list("query", collection, query);
    expect(answer.status).toBe(200);
    return answer.body.documents.map((d: Doc) => d.name);
  }

  test("without a query: oldest first, 20 a page, next null on the last page", async () => {
    const answer = await db.list("query", "items");
    expect(answer.body.documents).toEqual(items);
    expect(answer.body.next).toBeNull();
    expect((await db.list("query", "other")).body).toEqual({ documents: [], next: null });
  });

  test("where: equality on fields, combined, and null matching a stored null", async () => {
    expect(await names({ where: { done: false } })).toEqual(["apple", "carrot", "dates", "figs"]);
    expect(await names({ where: { done: false, kind: "fruit" } })).toEqual(["apple", "dates", "figs"]);
    expect(await names({ where: { kind: { "==": "veg" } } })).toEqual(["carrot"]);
    expect(await names({ where: { price: "6" } })).toEqual(["eggs"]);
    expect(await names({ where: { price: 6 } })).toEqual([]);
    expect(await names({ where: { note: null } })).toEqual(["carrot"]);
    expect(await names({ where: { missing: 1 } })).toEqual([]);
  });

  test("where: ranges compare values of the same JSON type only", async () => {
    expect(await names({ where: { price: { ">": 2 } } })).toEqual(["apple", "dates", "figs"]);
    expect(await names({ where: { price: { ">=": 2, "<": 10 } } })).toEqual(["apple", "carrot", "dates"]);
    expect(await names({ where: { price: { "<=": 1 } } })).toEqual(["banana"]);
    expect(await names({ where: { price: { ">": "5" } } })).toEqual(["eggs"]);
    expect(await names({ where: { name: { ">=": "c", "<": "e" } } })).toEqual(["carrot", "dates"]);
    expect(await names({ where: { done: false, price: { ">": 2 }, kind: "fruit" } })).toEqual([
      "apple",
      "dates",
      "figs",
    ]);
  });

  test("where: createdAt at the milliseconds a page sees, createdBy by email or null", async () => {
    const third = items[2]!;
    const after = await names({ where: { createdAt: { ">": third.createdAt } } });
    expect(after).not.toContain("carrot");
    expect(after).toContain("dates");
    expect(await names({ where: { createdAt: { "<=": third.createdAt }, name: "carrot" } })).toEqual(["carrot"]);
    expect(await names({ where: { createdAt: third.createdAt } })).toContain("carrot");
    expect(await names({ where: { updatedAt: { ">=": items[0]!.updatedAt } } })).toHaveLength(items.length);
    expect(await names({ where: { createdBy: member.email } })).toEqual(["banana", "dates", "figs"]);
    expect(await names({ where: { createdBy: "MEMBER@example.com" } })).toEqual(["banana", "dates", "figs"]);
    expect(await names({ where: { createdBy: null } })).toEqual([]);
  });

  test("orderBy a field or createdAt, ascending or descending; a missing field sorts as null, first", async () => {
    expect(await names({ orderBy: "name" })).toEqual(["apple", "banana", "carrot", "dates", "eggs", "figs"]);
    expect(await names({ orderBy: "-name" })).toEqual(["figs", "eggs", "dates", "carrot", "banana", "apple"]);
    expect(await names({ orderBy: "-createdAt" })).toEqual(items.map((d) => d.name).reverse());
    expect(await names({ orderBy: "createdAt", limit: 2 })).toEqual(["apple", "banana"]);
    const byKind = await names({ orderBy: "kind", where: { done: false } });
    expect(byKind.slice(0, 3).sort()).toEqual(["apple", "dates", "figs"]);
    expect(byKind[3]).toBe("carrot");
    expect((await names({ orderBy: "kind" }))[0]).toBe("eggs");
    // Numbers before strings in JSON order; within numbers, by value.
    expect(await names({ orderBy: "price", where: { kind: "fruit" } })).toEqual(["banana", "apple", "dates", "figs"]);
    expect(await names({ orderBy: "-updatedAt", where: { kind: "veg" } })).toEqual(["carrot"]);
  });

  test("bad where, orderBy and limit values are invalid, each with a message saying how to write it", async () => {
    const bad: [Record<string, string>, string][] = [
      [{ where: "{done:false}" }, "where is not JSON"],
      [{ where: "[1]" }, "where must be a JSON object"],
      [{ where: "null" }, "where must be a JSON object"],
      [{ where: JSON.stringify({ "bad name": 1 }) }, 'where names "bad name"'],
      [{ where: JSON.stringify({ "a.b": 1 }) }, 'where names "a.b"'],
      [{ where: JSON.stringify({ id: "x" }) }, "where cannot name id"],
      [{ where: JSON.stringify({ price: { "~": 1 } }) }, 'where.price has the operator "~"'],
      [{ where: JSON.stringify({ price: { "!=": 1 } }) }, 'where.price has the operator "!="'],
      [{ where: JSON.stringify({ price: {} }) }, "where.price is an empty object"],
      [{ where: JSON.stringify({ price: [1, 2] }) }, "where.price: compare with a string, number, boolean or null"],
      [
        { where: JSON.stringify({ price: { "<": [1] } }) },
        "where.price: compare with a string, number, boolean or null",
      ],
      [{ where: JSON.stringify({ price: { a: 1 } }) }, 'where.price has the operator "a"'],
      [{ where: JSON.stringify({ done: { ">": true } }) }, "where.done: > compares strings or numbers only"],
      [{ where: JSON.stringify({ note: { "<": null } }) }, "where.note: < compares strings or numbers only"],
      [{ where: JSON.stringify({ createdAt: { ">": "yesterday" } }) }, "where.createdAt: compare with a time"],
      [{ where: JSON.stringify({ createdAt: 5 }) }, "where.createdAt: compare with a time"],
      [{ where: JSON.stringify({ createdBy: { ">": "a" } }) }, "where.createdBy compares with == only"],
      [{ where: JSON.stringify({ createdBy: 5 }) }, "where.createdBy: compare with an email"],
      [
        {
          where: JSON.stringify(
            Object.fromEntries(Array.from({ length: DATA_LIMITS.maxWhereFields + 1 }, (_, n) => [`f${n}`, n])),
          ),
        },
        `where may name at most ${DATA_LIMITS.maxWhereFields} fields`,
      ],
      [{ orderBy: "id" }, 'orderBy cannot be "id"'],
      [{ orderBy: "createdBy" }, 'orderBy cannot be "createdBy"'],
      [{ orderBy: "bad name" }, 'orderBy cannot be "bad name"'],
      [{ orderBy: "-" }, 'orderBy cannot be ""'],
      [{ orderBy: "--name" }, 'orderBy cannot be "-name"'],
      [{ limit: "0" }, "limit must be a whole number from 1 to 100"],
      [{ limit: "101" }, "limit must be a whole number from 1 to 100"],
      [{ limit: "2.5" }, "limit must be a whole number from 1 to 100"],
      [{ limit: "ten" }, "limit must be a whole number from 1 to 100"],
      [{ after: "not-a-cursor" }, "after is not a cursor Hatch made"],
      [{ after: Buffer.from("[1,2]").toString("base64url") }, "after is not a cursor Hatch made"],
    ];
    for (const [query, message] of bad) {
      const answer = await db.list("query", "items", query);
      expect({ query, status: answer.status, code: answer.body.error?.code }).toEqual({
        query,
        status: 400,
        code: "invalid",
      });
      expect({ query, message: answer.body.error.message }).toEqual({
        query,
        message: expect.stringContaining(message),
      });
    }
    expect(
      await names({
        where: Object.fromEntries(Array.from({ length: DATA_LIMITS.maxWhereFields }, (_, n) => [`f${n}`, n])),
      }),
    ).toEqual([]);
    expect(await names({ limit: String(DATA_LIMITS.maxListLimit) })).toHaveLength(items.length);
  });

  describe("paging by cursor", () => {
    const paged: Doc[] = [];
    beforeAll(async () => {
      // Sort values repeat (group), some are missing, and several documents share a createdAt to the microsecond.
      for (let n = 0; n < 23; n++) {
        const doc: Record<string, unknown> = {
          n,
          group: n % 4 === 3 ? undefined : Math.floor(n / 8),
          label: `x${n % 3}`,
        };
        paged.push((await db.add("query", "paged", doc)).body);
      }
      const same = paged.slice(5, 12).map((d) => d.id);
      for (const id of same)
        await t.ctx.db
          .update(documents)
          .set({ createdAt: new Date("2026-01-01T00:00:00.000Z") })
          .where(eq(documents.id, id));
    });

    async function everything(
      query: Record<string, unknown>,
      limit: number,
    ): Promise<{ ids: string[]; pages: number }> {
      const ids: string[] = [];
      let after: string | null = null;
      let pages = 0;
      do {
        const answer = await db.list("query", "paged", { ...query, limit: String(limit), ...(after ? { after } : {}) });
        expect(answer.status).toBe(200);
        expect(answer.body.documents.length).toBeLessThanOrEqual(limit);
        ids.push(...answer.body.documents.map((d: Doc) => d.id));
        after = answer.body.next;
        pages++;
      } while (after && pages < 50);
      return { ids, pages };
    }

    for (const query of [
      {},
      { orderBy: "-createdAt" },
      { orderBy: "group" },
      { orderBy: "-group" },
      { orderBy: "label", where: { group: { "<": 2 } } },
      { orderBy: "-updatedAt" },
    ]) {
      test(`every document once, in order: ${JSON.stringify(query)}`, async () => {
        const whole = await db.list("query", "paged", { ...query, limit: "100" });
        const expected = whole.body.documents.map((d: Doc) => d.id);
        expect(expected.length).toBeGreaterThan(8);
        for (const limit of [1, 3, 4, 7]) {
          const { ids, pages } = await everything(query, limit);
          expect({ limit, ids }).toEqual({ limit, ids: expected });
          expect(pages).toBe(Math.max(1, Math.ceil(expected.length / limit)));
        }
      });
    }

    test("pages follow the sort value (missing first), equal values together", async () => {
      const byGroup = (await db.list("query", "paged", { orderBy: "group", limit: "100" })).body.documents as Doc[];
      const groups = byGroup.map((d) => d.group ?? -1);
      expect(groups).toEqual([...groups].sort((a, b) => a - b));
      expect(groups.filter((g) => g === 0)).toHaveLength(6);
      // (Ties are broken by id in the database's collation, the same for ORDER BY and for the cursor.)
      const byCreated = (await db.list("query", "paged", { limit: "100" })).body.documents as Doc[];
      expect(byCreated.slice(0, 7).map((d) => d.createdAt)).toEqual(Array(7).fill("2026-01-01T00:00:00.000Z"));
      expect(
        byCreated
          .slice(0, 7)
          .map((d) => d.n)
          .sort((a, b) => a - b),
      ).toEqual([5, 6, 7, 8, 9, 10, 11]);
    });

    test("a cursor made for another where or orderBy is refused", async () => {
      const first = await db.list("query", "paged", { orderBy: "group", limit: "2" });
      const after = first.body.next as string;
      expect((await db.list("query", "paged", { orderBy: "group", limit: "5", after })).status).toBe(200);
      for (const query of [
        { orderBy: "-group" },
        { orderBy: "label" },
        {},
        { orderBy: "group", where: { label: "x1" } },
      ]) {
        const answer = await db.list("query", "paged", { ...query, after });
        expect({ query, status: answer.status }).toEqual({ query, status: 400 });
        expect(answer.body.error.message).toContain("another where or orderBy");
      }
      // The same query written another way (key order, == spelled out) is the same query.
      const written = await db.list("query", "paged", {
        orderBy: "label",
        where: { group: 0, label: "x1" },
        limit: "1",
      });
      const again = await db.list("query", "paged", {
        orderBy: "label",
        where: JSON.stringify({ label: { "==": "x1" }, group: 0 }),
        after: written.body.next,
      });
      expect(again.status).toBe(200);
    });

    test("the creator rule filters pages too", async () => {
      await seedApp(t.ctx, {
        ...ownerSeed,
        address: "own-pages",
        files,
        config: { collections: { notes: { read: "creator", create: "signed_in" } } },
      });
      for (let n = 0; n < 5; n++) await db.add("own-pages", "notes", { n }, n % 2 ? member : stranger);
      const first = await db.list("own-pages", "notes", { limit: "2" }, stranger);
      const second = await db.list("own-pages", "notes", { limit: "2", after: first.body.next }, stranger);
      expect([...first.body.documents, ...second.body.documents].map((d: Doc) => d.n)).toEqual([0, 2, 4]);
      expect(second.body.next).toBeNull();
    });
  });

  test("Postgres answers a list by createdAt and a list by an equality filter from the indexes", async () => {
    const bulk = await seedApp(t.ctx, { ...ownerSeed, address: "bulk", files, config });
    const rows = Array.from({ length: 3000 }, (_, n) => ({
      appId: bulk.id,
      collection: "items",
      id: `bulk${n}`,
      data: { n, color: `c${n % 500}` },
      bytes: 20,
    }));
    for (let start = 0; start < rows.length; start += 500)
      await t.ctx.db.insert(documents).values(rows.slice(start, start + 500));
    await t.ctx.db.execute(sql`analyze apps.documents`);
    /**
     * The plan Postgres uses for a list statement, after `enable_seqscan = off` (a table this small would otherwise be
     * read whole): a generic plan (values unknown) for the statements kept prepared, else one for the values.
     */
    const plan = async (params: Record<string, string>, onlyCreator: string | null = null): Promise<string> => {
      const query = parseListQuery(new URLSearchParams(params));
      const built = listStatement(t.ctx.db, query, onlyCreator !== null).toSQL();
      const values = fillPlaceholders(
        built.params,
        listStatementValues({ appId: bulk.id, collection: "items" }, query, onlyCreator),
      );
      const literal = (value: unknown) =>
        typeof value === "number" ? String(value) : `'${String(value).replaceAll("'", "''")}'`;
      return t.ctx.db.transaction(async (tx) => {
        await tx.execute(sql`set local enable_seqscan = off`);
        await tx.execute(
          sql.raw(`set local plan_cache_mode = ${keptPrepared(query) ? "force_generic_plan" : "force_custom_plan"}`),
        );
        await tx.execute(sql.raw(`prepare hatch_plan as ${built.sql}`));
        const result = (await tx.execute(
          sql.raw(`explain execute hatch_plan(${values.map(literal).join(", ")})`),
        )) as unknown;
        await tx.execute(sql`deallocate hatch_plan`);
        const lines = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Record<
          string,
          string
        >[];
        return lines.map((line) => Object.values(line)[0]).join("\n");
      });
    };
    const byCreated = await plan({});
    if (process.env.SHOW_PLANS) process.stdout.write(`${byCreated}\n`);
    expect(byCreated).toContain("documents_by_created");
    expect(byCreated).not.toContain("Sort");
    expect(await plan({ orderBy: "-createdAt" })).toContain("documents_by_created");
    expect(await plan({ where: JSON.stringify({ color: "c7" }) })).toContain("documents_data");
    // The next page starts in the index too (the cursor's row comparison is an index condition).
    const after = (await db.list("bulk", "items", { limit: "5" })).body.next as string;
    const next = await plan({ limit: "5", after });
    if (process.env.SHOW_PLANS) process.stdout.write(`${next}\n`);
    expect(next).toContain("documents_by_created");
    expect(next).not.toContain("Sort");
    // Under the creator read rule: each viewer's own documents, by createdAt.
    const own = await plan({}, member.sub);
    expect(own).toContain("documents_by_creator");
    expect(own).not.toContain("Sort");
  });
});
