import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { signViewerTicket } from "@hatch/contracts";
import { DATA_LIMITS } from "../src/spec/data-rules.ts";
import { addressKey, createLogger, MemoryRateCounter } from "@hatch/platform";
import { checkSameOrigin, ViewerRateLimit } from "../src/http/caller.ts";
import { DataError } from "../src/http/answers.ts";
import { appsTable } from "../src/db/schema.ts";
import { startTestHost, type TestHost, announceAppChange } from "./support/host.ts";
import { seedApp } from "./support/seed.ts";
import { expectError, signInTo, type TestViewer } from "./support/buckets.ts";

// The part every data request shares (http/caller.ts, host/hatch-routes.ts): who the viewer is, sign-in, who may use
// a non-public app's data, a paused app, unknown paths, the per-viewer rate limit and a gateway that is down.

const GATEWAY = "http://localhost:39999";
const owner: TestViewer = {
  sub: "user-owner",
  email: "owner@example.com",
  name: "Olga Owner",
  account: "acct-company",
};
const nameless: TestViewer = { sub: "user-nameless", email: "nameless@example.com", account: "acct-nameless" };
const friend: TestViewer = {
  sub: "user-friend",
  email: "friend@example.com",
  emailVerified: true,
  account: "acct-friend",
};
const stranger: TestViewer = { sub: "user-stranger", email: "stranger@example.com", account: "acct-stranger" };
const BUCKETS = { buckets: { notes: { read: "anyone", create: "anyone", delete: "anyone" } } };

describe("app data: the common part of every request", () => {
  let t: TestHost;

  beforeAll(async () => {
    t = await startTestHost({ gatewayUrl: GATEWAY, env: { TRUST_PROXY: "true" } });
    const base = {
      owner: { id: owner.sub, email: owner.email },
      accountId: "acct-company",
      files: { "index.html": "<h1>App</h1>" },
      config: BUCKETS,
    };
    await seedApp(t.ctx, { ...base, address: "open", visibility: "public" });
    await seedApp(t.ctx, { ...base, address: "shared", visibility: "people", people: [friend.email] });
    await seedApp(t.ctx, { ...base, address: "limited", visibility: "public" });
    await seedApp(t.ctx, { ...base, address: "resting", visibility: "public", paused: true });
    await seedApp(t.ctx, { ...base, address: "hidden-rest", visibility: "private", paused: true });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  test("/_hatch/me: null for an anonymous viewer of a public app, never cached", async () => {
    const response = await t.get("open", "/_hatch/me");
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(await response.json()).toBeNull();
  });

  test("/_hatch/me: the signed-in viewer's email and name as the gateway says them (name null when it has none)", async () => {
    const cookie = await signInTo(t, "open", owner);
    expect(await (await t.get("open", "/_hatch/me", { headers: { cookie } })).json()).toEqual({
      email: owner.email,
      name: "Olga Owner",
    });
    const other = await signInTo(t, "open", nameless);
    expect(await (await t.get("open", "/_hatch/me", { headers: { cookie: other } })).json()).toEqual({
      email: nameless.email,
      name: null,
    });
  });

  test("/_hatch/me: a cookie whose Hatch session ended counts as no viewer", async () => {
    const session = t.gateway.signIn(stranger);
    const ticket = signViewerTicket(t.ctx.keys.viewer, { sub: stranger.sub, session, address: "open" });
    const cookie = (
      (await t.get("open", `/_hatch/auth?ticket=${ticket}&path=/`)).headers.get("set-cookie") ?? ""
    ).split(";")[0]!;
    expect(await (await t.get("open", "/_hatch/me", { headers: { cookie } })).json()).toEqual({
      email: stranger.email,
      name: null,
    });
    t.gateway.signOut(session);
    expect(await (await t.get("open", "/_hatch/me", { headers: { cookie } })).json()).toBeNull();
  });

  test("/_hatch/me: a public app sees someone who has not agreed to share who they are as nobody; its owner and organization need no consent", async () => {
    const { id } = await seedApp(t.ctx, {
      owner: { id: owner.sub, email: owner.email },
      accountId: "acct-company",
      address: "asking",
      visibility: "public",
      files: { "index.html": "<h1>Asking</h1>" },
    });
    const colleague: TestViewer = { sub: "user-colleague", email: "colleague@example.com", account: "acct-company" };
    for (const viewer of [stranger, owner, colleague]) t.gateway.withheld.add(`${viewer.sub} ${id}`);
    const me = async (viewer: TestViewer) =>
      (await t.get("asking", "/_hatch/me", { headers: { cookie: await signInTo(t, "asking", viewer) } })).json();
    expect(await me(stranger)).toBeNull();
    expect(await me(owner)).toEqual({ email: owner.email, name: "Olga Owner" });
    expect(await me(colleague)).toEqual({ email: colleague.email, name: null });
    // Agreed (the gateway now says so): the same person is named.
    t.gateway.withheld.delete(`${stranger.sub} ${id}`);
    expect(await me(stranger)).toEqual({ email: stranger.email, name: null });
  });

  test("/_hatch/me answers GET only", async () => {
    const response = await t.get("open", "/_hatch/me", { method: "POST" });
    expect(response.headers.get("allow")).toBe("GET");
    await expectError(response, 405, "invalid");
  });

  test("/_hatch/signin sends the viewer through the gateway's sign-in and back to a path on this origin only", async () => {
    const cases: [string | null, string][] = [
      ["/notes?tab=2", "/notes?tab=2"],
      ["/", "/"],
      [null, "/"],
      ["//evil.example/steal", "/"],
      ["https://evil.example/", "/"],
      ["/\\evil.example", "/"],
      ["/\t/evil.example", "/"],
      ["notes", "/"],
    ];
    for (const [path, back] of cases) {
      const response = await t.get(
        "shared",
        path === null ? "/_hatch/signin" : `/_hatch/signin?${new URLSearchParams({ path })}`,
      );
      const location = response.headers.get("location");
      expect({ path, status: response.status, location }).toEqual({
        path,
        status: 302,
        location: `${GATEWAY}/apps/signin?${new URLSearchParams({ app: "shared", path: back })}`,
      });
      expect(response.headers.get("cache-control")).toBe("no-store");
    }
  });

  test("a non-public app's data refuses an anonymous viewer and one it is not shared with (403 JSON)", async () => {
    for (const path of ["/_hatch/me", "/_hatch/files/notes"]) {
      expect(await expectError(await t.get("shared", path), 403, "forbidden")).toContain("Sign in");
      const cookie = await signInTo(t, "shared", stranger);
      expect(await expectError(await t.get("shared", path, { headers: { cookie } }), 403, "forbidden")).toContain(
        "stranger@example.com",
      );
    }
    const upload = await t.get("shared", "/_hatch/files/notes?name=a.txt", { method: "POST", body: "x" });
    await expectError(upload, 403, "forbidden");
    const cookie = await signInTo(t, "shared", friend);
    expect(await (await t.get("shared", "/_hatch/me", { headers: { cookie } })).json()).toEqual({
      email: friend.email,
      name: null,
    });
    expect((await t.get("shared", "/_hatch/files/notes", { headers: { cookie } })).status).toBe(200);
  });

  test("a paused app's data is unavailable (503 JSON); it comes back when unpaused", async () => {
    for (const path of ["/_hatch/me", "/_hatch/files/notes", "/_hatch/db/notes"]) {
      expect(await expectError(await t.get("resting", path), 503, "unavailable")).toContain("paused");
    }
    await t.ctx.db.update(appsTable).set({ paused: false }).where(eq(appsTable.address, "resting"));
    await announceAppChange(t.ctx, "resting");
    expect((await t.get("resting", "/_hatch/me")).status).toBe(200);
  });

  test("that a non-public app is paused is told only to those who may open it", async () => {
    expect(await expectError(await t.get("hidden-rest", "/_hatch/me"), 403, "forbidden")).toContain("Sign in");
    const outsider = await signInTo(t, "hidden-rest", stranger);
    await expectError(
      await t.get("hidden-rest", "/_hatch/files/notes", { headers: { cookie: outsider } }),
      403,
      "forbidden",
    );
    const cookie = await signInTo(t, "hidden-rest", owner);
    expect(
      await expectError(await t.get("hidden-rest", "/_hatch/files/notes", { headers: { cookie } }), 503, "unavailable"),
    ).toContain("paused");
  });

  test("an unknown /_hatch/ path or app answers not_found as JSON", async () => {
    for (const path of ["/_hatch/", "/_hatch/nothing", "/_hatch/db", "/_hatch/files", "/_hatch/me/too"]) {
      const message = await expectError(await t.get("open", path), 404, "not_found");
      expect({ path, message }).toEqual({ path, message: expect.stringContaining("nothing at this /_hatch/ path") });
    }
    expect(await expectError(await t.get("no-such-app", "/_hatch/me"), 404, "not_found")).toContain("no-such-app");
  });

  test("too many requests from one caller: 429 JSON with Retry-After; a spoofed X-Forwarded-For does not reset it", async () => {
    // TRUST_PROXY: the proxy appends the address it saw; what the client wrote before it must not make a new caller.
    const from = (client: string, spoofed: number) => ({
      headers: { "x-forwarded-for": `198.51.100.${spoofed % 250}, ${client}` },
    });
    for (let i = 0; i < DATA_LIMITS.requestsPerViewerPerMinute; i++) {
      const response = await t.get("limited", "/_hatch/me", from("203.0.113.7", i));
      if (response.status !== 200) throw new Error(`request ${i} answered ${response.status}`);
      await response.arrayBuffer();
    }
    const refused = await t.get("limited", "/_hatch/me", from("203.0.113.7", 999));
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await expectError(refused, 429, "limit_exceeded")).toContain(
      `at most ${DATA_LIMITS.requestsPerViewerPerMinute} a minute`,
    );
    // Another address, and the same caller on another app, have their own budget.
    expect((await t.get("limited", "/_hatch/me", from("203.0.113.8", 1))).status).toBe(200);
    expect((await t.get("open", "/_hatch/me", from("203.0.113.7", 1))).status).toBe(200);
  });

  test("when the gateway is down, a request with a cookie is unavailable (503 JSON); an anonymous one still works", async () => {
    const cookie = await signInTo(t, "open", owner);
    t.gateway.down();
    try {
      const refused = await t.get("open", "/_hatch/me", { headers: { cookie } });
      expect(refused.headers.get("retry-after")).toBe("30");
      expect(await expectError(refused, 503, "unavailable")).toContain("could not check who you are");
      expect((await t.get("open", "/_hatch/files/notes")).status).toBe(200);
    } finally {
      t.gateway.up();
    }
    expect(await (await t.get("open", "/_hatch/me", { headers: { cookie } })).json()).toEqual({
      email: owner.email,
      name: "Olga Owner",
    });
  });
});

// The data request limit on the platform's rate counter with windows from a caller's first request (the memory one of
// `bun run dev`; data-rate-shared.test.ts runs it on JetStream across copies).
describe("the data request limit (a minute from the first request)", () => {
  function limiter(perMinute: number, maxKeys?: number) {
    let now = 1_000_000;
    const counter = new MemoryRateCounter(() => now, maxKeys, "first");
    const log = createLogger({ level: "error" });
    const limit = new ViewerRateLimit(counter, { perMinute, scope: "data", log });
    return {
      rate: { take: (key: string) => limit.take(key), size: () => counter.size },
      advance: (ms: number) => (now += ms),
    };
  }

  async function refusal(take: () => Promise<void>): Promise<DataError> {
    try {
      await take();
    } catch (error) {
      if (error instanceof DataError) return error;
      throw error;
    }
    throw new Error("expected a refusal");
  }

  test("allows perMinute requests, then refuses with limit_exceeded and the seconds left in Retry-After", async () => {
    const { rate, advance } = limiter(3);
    for (let i = 0; i < 3; i++) await rate.take("a");
    advance(15_000);
    const error = await refusal(() => rate.take("a"));
    expect({ code: error.code, retry: error.headers["Retry-After"] }).toEqual({ code: "limit_exceeded", retry: "45" });
    advance(44_500);
    expect((await refusal(() => rate.take("a"))).headers["Retry-After"]).toBe("1");
  });

  test("the window resets a minute after it started, and each caller has their own", async () => {
    const { rate, advance } = limiter(2);
    await rate.take("a");
    await rate.take("a");
    await rate.take("b");
    await refusal(() => rate.take("a"));
    advance(59_999);
    await refusal(() => rate.take("a"));
    await rate.take("b");
    advance(1);
    await rate.take("a");
    await rate.take("a");
    await refusal(() => rate.take("a"));
  });

  test("a flood of new callers keeps the remembered windows bounded", async () => {
    const { rate } = limiter(5, 100);
    for (let i = 0; i < 1_000; i++) await rate.take(`caller-${i}`);
    expect(rate.size()).toBeLessThanOrEqual(100);
    // The newest callers are still counted.
    for (let i = 0; i < 4; i++) await rate.take("caller-999");
    await refusal(() => rate.take("caller-999"));
  });
});

describe("addressKey", () => {
  test("IPv4 as it is, IPv4-mapped as IPv4, IPv6 by its /64", () => {
    expect(addressKey("203.0.113.7")).toBe("203.0.113.7");
    expect(addressKey("::ffff:203.0.113.7")).toBe("203.0.113.7");
    expect(addressKey("2001:db8:0001:0002:aaaa:bbbb:cccc:dddd")).toBe("2001:db8:1:2::/64");
    expect(addressKey("2001:db8:1:2::9")).toBe("2001:db8:1:2::/64");
    expect(addressKey("2001:DB8::1")).toBe("2001:db8:0:0::/64");
    expect(addressKey("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
  });
});

describe("changes only from the app's own pages", () => {
  const config = { appsProtocol: "https:" as const, appsDomain: "apps.example.com" };
  const request = (headers: Record<string, string>) =>
    new Request("http://internal/_hatch/db/todos", { method: "POST", headers });

  test("the app's default origin, and the custom domain the request was sent to", () => {
    expect(() =>
      checkSameOrigin(
        request({
          host: "todo.apps.example.com",
          origin: "https://todo.apps.example.com",
          "sec-fetch-site": "same-origin",
        }),
        config,
        "todo",
      ),
    ).not.toThrow();
    expect(() =>
      checkSameOrigin(
        request({ host: "todo.example.org", origin: "https://todo.example.org", "sec-fetch-site": "same-origin" }),
        config,
        "todo",
      ),
    ).not.toThrow();
    expect(() => checkSameOrigin(request({ host: "todo.apps.example.com" }), config, "todo")).not.toThrow();
  });

  test("another origin, another app's origin, or a cross-site fetch is refused", () => {
    const refusedHeaders: Record<string, string>[] = [
      { host: "todo.example.org", origin: "https://evil.example" },
      { host: "todo.apps.example.com", origin: "https://other.apps.example.com" },
      { host: "todo.example.org", origin: "https://todo.example.org", "sec-fetch-site": "cross-site" },
      { host: "todo.example.org", origin: "null" },
    ];
    for (const headers of refusedHeaders) {
      expect(() => checkSameOrigin(request(headers), config, "todo")).toThrow(
        "only be changed from the app's own pages",
      );
    }
  });
});
