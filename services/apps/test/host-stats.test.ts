import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { createLogger } from "@hatch/platform";
import { signViewerTicket } from "@hatch/contracts";
import { appsTable, dailyOpens, dailyViewers } from "../src/db/schema.ts";
import { StatsCounter } from "../src/host/stats.ts";
import { startTestHost, type TestHost } from "./support/host.ts";
import { seedApp } from "./support/seed.ts";

const today = () => new Date().toISOString().slice(0, 10);
const UA_ONE = "Mozilla/5.0 (X11; Linux x86_64) TestBrowser/1";
const UA_TWO = "Mozilla/5.0 (Macintosh) OtherBrowser/2";

describe("app host: opens and unique viewers", () => {
  let t: TestHost;
  beforeAll(async () => {
    // Flushed by the tests, not by the timer.
    t = await startTestHost({ statsFlushMs: 3_600_000 });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  async function rows(appId: string) {
    const opens = await t.ctx.db.select().from(dailyOpens).where(eq(dailyOpens.appId, appId));
    const viewers = await t.ctx.db.select().from(dailyViewers).where(eq(dailyViewers.appId, appId));
    return { opens, viewers };
  }

  test("each HTML page load is an open; assets, HEAD, 404s and script fetches are not", async () => {
    const app = await seedApp(t.ctx, { address: "counted", files: { "index.html": "<h1>hi</h1>", "app.js": "1" } });
    const get = async (path: string, init: RequestInit = {}, ua = UA_ONE) => {
      const response = await t.get("counted", path, { ...init, headers: { "user-agent": ua, ...init.headers } });
      await response.arrayBuffer();
      return response.status;
    };
    expect(await get("/")).toBe(200);
    expect(await get("/", { headers: { "sec-fetch-dest": "document" } })).toBe(200);
    expect(
      await get("/", {
        headers: { "if-none-match": (await t.get("counted", "/", { method: "HEAD" })).headers.get("etag")! },
      }),
    ).toBe(304);
    expect(await get("/", {}, UA_TWO)).toBe(200);
    // Not opens:
    expect(await get("/app.js")).toBe(200);
    expect(await get("/", { method: "HEAD" })).toBe(200);
    expect(await get("/missing")).toBe(404);
    expect(await get("/", { headers: { "sec-fetch-dest": "empty" } })).toBe(200);

    // Nothing is written before a flush: serving never waits on the database.
    expect((await rows(app.id)).opens).toEqual([]);
    await t.host.flushStats();
    const { opens, viewers } = await rows(app.id);
    expect(opens).toEqual([{ appId: app.id, day: today(), opens: 4 }]);
    expect(viewers.length).toBe(2);
    for (const row of viewers) {
      expect(row.viewer).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(row.viewer).not.toContain("127.0.0.1");
    }

    // A later flush adds to the day's row.
    await get("/");
    await t.host.flushStats();
    expect((await rows(app.id)).opens[0]!.opens).toBe(5);
    expect((await rows(app.id)).viewers.length).toBe(2);
  });

  test("the stored opens and viewers hold neither the IP address nor the user agent", async () => {
    const app = await seedApp(t.ctx, { address: "no-ip", files: { "index.html": "x" } });
    await (await t.get("no-ip", "/", { headers: { "user-agent": UA_ONE } })).text();
    await t.host.flushStats();
    const { opens, viewers } = await rows(app.id);
    const stored = JSON.stringify({ opens, viewers });
    expect(viewers.length).toBe(1);
    for (const secret of ["127.0.0.1", "::1", UA_ONE, "TestBrowser"]) expect(stored).not.toContain(secret);
  });

  test("a signed-in viewer is one viewer across browsers, and a different one on each app", async () => {
    const owner = { id: "user-counted", email: "counted@example.com" };
    const first = await seedApp(t.ctx, {
      address: "signed-a",
      visibility: "private",
      owner,
      files: { "index.html": "a" },
    });
    const second = await seedApp(t.ctx, {
      address: "signed-b",
      visibility: "private",
      owner,
      files: { "index.html": "b" },
    });
    for (const address of ["signed-a", "signed-b"]) {
      const session = t.gateway.signIn({ sub: owner.id, email: owner.email, account: "acct" });
      const ticket = signViewerTicket(t.ctx.keys.viewer, { sub: owner.id, session, address });
      const cookie = (await t.get(address, `/_hatch/auth?ticket=${ticket}`)).headers.get("set-cookie")!.split(";")[0]!;
      for (const ua of [UA_ONE, UA_TWO])
        await (await t.get(address, "/", { headers: { cookie, "user-agent": ua } })).text();
    }
    await t.host.flushStats();
    const a = await rows(first.id);
    const b = await rows(second.id);
    expect(a.opens[0]!.opens).toBe(2);
    expect(a.viewers.length).toBe(1);
    expect(b.viewers.length).toBe(1);
    expect(a.viewers[0]!.viewer).not.toBe(b.viewers[0]!.viewer);
  });
});

describe("stats counter", () => {
  let t: TestHost;
  beforeAll(async () => {
    t = await startTestHost();
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  test("stop writes what is still pending", async () => {
    const app = await seedApp(t.ctx, { address: "on-stop" });
    const counter = new StatsCounter(t.ctx.db, t.ctx.keys.stats, createLogger({ level: "silent" }), {
      flushEveryMs: 3_600_000,
    });
    counter.count(app.id, "a:10.0.0.1\nUA");
    counter.count(app.id, "a:10.0.0.2\nUA");
    await counter.stop();
    const opens = await t.ctx.db.select().from(dailyOpens).where(eq(dailyOpens.appId, app.id));
    expect(opens.map((r) => r.opens)).toEqual([2]);
  });

  test("counts of an app deleted before the flush are dropped; the others are written", async () => {
    const gone = await seedApp(t.ctx, { address: "gone-soon" });
    const kept = await seedApp(t.ctx, { address: "kept" });
    const counter = new StatsCounter(t.ctx.db, t.ctx.keys.stats, createLogger({ level: "silent" }), {
      flushEveryMs: 3_600_000,
    });
    counter.count(gone.id, "u:1");
    counter.count(kept.id, "u:1");
    await t.ctx.db.delete(appsTable).where(eq(appsTable.id, gone.id));
    await counter.stop();
    expect((await t.ctx.db.select().from(dailyOpens).where(eq(dailyOpens.appId, kept.id))).map((r) => r.opens)).toEqual(
      [1],
    );
    expect(await t.ctx.db.select().from(dailyViewers).where(eq(dailyViewers.appId, kept.id))).toHaveLength(1);
    expect(await t.ctx.db.select().from(dailyOpens).where(eq(dailyOpens.appId, gone.id))).toEqual([]);
  });

  test("opens are counted per UTC day", async () => {
    const app = await seedApp(t.ctx, { address: "two-days" });
    const counter = new StatsCounter(t.ctx.db, t.ctx.keys.stats, createLogger({ level: "silent" }), {
      flushEveryMs: 3_600_000,
    });
    counter.count(app.id, "u:1", Date.parse("2026-11-20T23:59:59Z"));
    counter.count(app.id, "u:1", Date.parse("2026-11-21T00:00:01Z"));
    counter.count(app.id, "u:2", Date.parse("2026-11-21T12:00:00Z"));
    await counter.stop();
    const opens = await t.ctx.db
      .select({ day: dailyOpens.day, opens: dailyOpens.opens })
      .from(dailyOpens)
      .where(eq(dailyOpens.appId, app.id));
    expect(opens.sort((x, y) => x.day.localeCompare(y.day))).toEqual([
      { day: "2026-11-20", opens: 1 },
      { day: "2026-11-21", opens: 2 },
    ]);
    expect(await t.ctx.db.select().from(dailyViewers).where(eq(dailyViewers.appId, app.id))).toHaveLength(3);
  });
});
