import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { apiRule, type ApiRule } from "../src/spec/server-code.ts";
import { createApiCaller, type ApiCallerOptions } from "../src/apis/call.ts";
import { apiUrl } from "../src/apis/target.ts";
import { DataError } from "../src/http/answers.ts";
import { secrets } from "../src/db/schema.ts";
import { bindingOf } from "../src/secrets/destinations.ts";
import { secretAad } from "../src/secrets/sealed.ts";
import { usesIn } from "../src/secrets/usage.ts";
import { loadHostedApp, type HostedApp } from "../src/http/site.ts";
import { DataClient, member, owner, ownerSeed } from "./support/collections.ts";
import { startFakeApi, type FakeApi } from "./support/fake-api.ts";
import { rawStatus, startTestHost, type TestHost } from "./support/host.ts";
import { seedApp } from "./support/seed.ts";

// Declared API calls against a fake API over real HTTP: through the app host's /_hatch/api route as a page makes
// them, and through Outbound.callApi itself for the limits a test sets small (timeout, answer size, private hosts).

const WEATHER_KEY = "wk-3f9a-SECRET-value";
const CRM_TOKEN = "crm/tok+en=SECRET";
const files = { "index.html": "<h1>Weather</h1>" };

describe("declared APIs", () => {
  let t: TestHost;
  let api: FakeApi;
  let data: DataClient;
  let logs: string[];
  const address = "weather-app";

  beforeAll(async () => {
    logs = [];
    api = startFakeApi();
    t = await startTestHost({ logWrite: (line) => logs.push(line) });
    data = new DataClient(t);
    const config = {
      apis: {
        weather: { url: `${api.origin}/v1`, secret: "WEATHER_KEY", in: { query: "appid" } },
        crm: {
          url: `${api.origin}/v1`,
          secret: "CRM_TOKEN",
          in: { header: "X-Api-Key", prefix: "Key " },
          browser: "signed_in",
        },
        bearer: { url: api.origin, secret: "WEATHER_KEY" },
        unset: { url: `${api.origin}/v1`, secret: "NOT_SET_YET" },
        members: { url: `${api.origin}/v1`, secret: "WEATHER_KEY", browser: "owner" },
      },
    };
    const app = await seedApp(t.ctx, { ...ownerSeed, address, files, config });
    for (const [name, value] of [
      ["WEATHER_KEY", WEATHER_KEY],
      ["CRM_TOKEN", CRM_TOKEN],
    ] as const) {
      await t.ctx.db.insert(secrets).values({
        appId: app.id,
        name,
        ...t.ctx.sealer.seal(value, secretAad(app.id, name)),
        // Bound to the destinations the config declares, as the owner saw them on the secret's page.
        destinations: bindingOf(usesIn(config, name)),
        updatedBy: owner.sub,
        updatedByEmail: owner.email,
      });
    }
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await api?.stop();
  });

  const call = (path: string, init: RequestInit = {}) => t.get(address, `/_hatch/api/${path}`, init);
  const last = () => api.requests.at(-1)!;

  test("the secret goes in the declared query parameter; the answer is the API's, the secret scrubbed from it", async () => {
    const response = await call("weather/echo?city=Paris&units=metric");
    expect(response.status).toBe(200);
    expect(last().query).toEqual({ city: "Paris", units: "metric", appid: WEATHER_KEY });
    expect(last().path).toBe("/v1/echo");
    const text = await response.text();
    expect(text).not.toContain(WEATHER_KEY);
    expect(text).toContain("[secret]");
    expect(JSON.parse(text).query.appid).toBe("[secret]");
    expect(response.headers.get("content-type")).toStartWith("application/json");
    expect(response.headers.get("x-ratelimit-remaining")).toBe("41");
    expect(response.headers.get("set-cookie")).toBeNull();
    expect(response.headers.get("x-hatch-error")).toBeNull();
    expect(response.headers.get("cache-control")).toBe("no-store");
  });

  test("a header with its prefix; the page's cookie and Authorization never reach the API; safe headers do", async () => {
    const response = await call("crm/echo", {
      method: "POST",
      headers: {
        cookie: data.cookie(address, member),
        origin: t.origin(address),
        "content-type": "application/json",
        accept: "application/json",
        authorization: "Bearer page",
        "x-trace": "t1",
        "x-forwarded-for": "1.2.3.4",
      },
      body: JSON.stringify({ name: "Ada" }),
    });
    expect(response.status).toBe(200);
    const got = last();
    expect(got.method).toBe("POST");
    expect(got.body).toBe('{"name":"Ada"}');
    expect(got.headers["x-api-key"]).toBe(`Key ${CRM_TOKEN}`);
    expect(got.headers.cookie).toBeUndefined();
    expect(got.headers.authorization).toBeUndefined();
    expect(got.headers["x-forwarded-for"]).toBeUndefined();
    expect([
      got.headers["content-type"],
      got.headers.accept,
      got.headers["x-trace"],
      got.headers["user-agent"],
    ]).toEqual(["application/json", "application/json", "t1", "Hatch"]);
    const echoed = await response.text();
    expect(echoed).not.toContain(CRM_TOKEN);
    expect(echoed).not.toContain(encodeURIComponent(CRM_TOKEN));
  });

  test("the default placement is Authorization: Bearer; a secret echoed in a header comes back scrubbed", async () => {
    const response = await call("bearer/echo");
    expect(last().headers.authorization).toBe(`Bearer ${WEATHER_KEY}`);
    expect(response.headers.get("x-echo-auth")).toBeNull();
    expect(await response.text()).not.toContain(WEATHER_KEY);
  });

  test("the API's own errors and redirects pass through as they are, without Hatch's mark or a Location", async () => {
    const refused = await call("weather/status/429");
    expect([
      refused.status,
      refused.headers.get("retry-after"),
      refused.headers.get("x-hatch-error"),
      refused.headers.get("set-cookie"),
    ]).toEqual([429, "7", null, null]);
    expect(await refused.json()).toEqual({ error: "from the API" });
    const moved = await call("weather/redirect");
    expect([moved.status, moved.headers.get("location")]).toEqual([302, null]);
  });

  test("a path may not leave the base url; the caller may not set the secret's parameter or header", async () => {
    const before = api.requests.length;
    for (const path of [
      "weather/a%2fb/..%2f",
      "weather/a%5c..",
      "weather//evil.example/x",
      "weather/echo?appid=mine",
      "weather/echo?app%69d=mine",
    ]) {
      const response = await call(path);
      expect([path, response.status, response.headers.get("x-hatch-error")]).toEqual([path, 400, "invalid"]);
    }
    // Sent exactly as written (fetch would resolve the dots first): refused whichever way the host reads them.
    for (const target of [
      "/_hatch/api/weather/%2e%2e/%2e%2e/admin",
      "/_hatch/api/weather/a/%2E%2E/%2e%2e/x",
      "/_hatch/api/weather/../../x",
      "/_hatch/api/weather/.%2e/x",
    ]) {
      expect([target, [400, 404].includes(await rawStatus(t.port, `${address}.localhost:${t.port}`, target))]).toEqual([
        target,
        true,
      ]);
    }
    const header = await call("crm/echo", { headers: { cookie: data.cookie(address, member), "X-Api-Key": "mine" } });
    expect(header.status).toBe(400);
    expect((await header.json()).error.message).toContain("Hatch adds the secret CRM_TOKEN there");
    expect(api.requests.length).toBe(before);
  });

  test("unknown API: not_found naming the declared ones; a secret not set: unavailable naming it and tool_secret", async () => {
    const unknown = await call("nope/x");
    expect([unknown.status, unknown.headers.get("x-hatch-error")]).toEqual([404, "not_found"]);
    expect((await unknown.json()).error.message).toBe(
      'This app declares no API "nope"; service.json apis has: bearer, crm, members, unset, weather.',
    );
    const unset = await call("unset/x");
    expect(unset.status).toBe(503);
    expect((await unset.json()).error.message).toBe(
      "The secret NOT_SET_YET is not set, so the API unset cannot be called. The app's owner sets it with tool_secret (name NOT_SET_YET).",
    );
  });

  test("the browser rule: anonymous and other viewers are refused; the allowed viewer gets through", async () => {
    const anonymous = await call("crm/echo");
    expect([anonymous.status, anonymous.headers.get("x-hatch-error")]).toEqual([403, "forbidden"]);
    expect((await anonymous.json()).error.message).toContain("Sign in");
    const notOwner = await call("members/echo", { headers: { cookie: data.cookie(address, member) } });
    expect(notOwner.status).toBe(403);
    const theOwner = await call("members/echo", { headers: { cookie: data.cookie(address, owner) } });
    expect(theOwner.status).toBe(200);
  });

  test("only the app's own pages may call: another origin is refused", async () => {
    const before = api.requests.length;
    const fromElsewhere: Record<string, string>[] = [
      { origin: "http://other.localhost" },
      { "sec-fetch-site": "same-site" },
      { "sec-fetch-site": "cross-site", origin: "http://evil.example" },
    ];
    for (const headers of fromElsewhere) {
      const response = await call("weather/echo", { method: "POST", headers });
      expect(response.status).toBe(403);
      expect(response.headers.get("x-hatch-error")).toBe("forbidden");
    }
    expect(api.requests.length).toBe(before);
  });

  test("a request body over the limit is refused before anything is sent", async () => {
    const before = api.requests.length;
    const response = await call("weather/echo", { method: "POST", body: new Uint8Array(1024 * 1024 + 1) });
    expect([response.status, response.headers.get("x-hatch-error")]).toEqual([413, "too_large"]);
    expect(api.requests.length).toBe(before);
  });

  describe("Outbound.callApi with small limits", () => {
    let app: HostedApp;
    beforeAll(async () => {
      app = (await loadHostedApp(t.ctx.db, address))!;
    });
    const server = { source: "server" as const, viewer: null };
    const get = { method: "GET", headers: {}, body: null };
    const caller = (options: ApiCallerOptions, apiPrivateHosts = true) =>
      createApiCaller({ ...t.ctx, config: { ...t.ctx.config, apiPrivateHosts } }, options);
    const failure = async (promise: Promise<unknown>) => {
      const error = await promise.then(
        () => null,
        (e: unknown) => e,
      );
      if (!(error instanceof DataError)) throw new Error(`expected a DataError, got ${String(error)}`);
      return { code: error.code, message: error.message };
    };

    test("server code may call an API whose browser rule would refuse an anonymous page", async () => {
      const result = await caller({})(app, "crm", "/echo", get, server);
      expect(result.status).toBe(200);
    });

    test("an answer over the size cap is too_large", async () => {
      api.bigBytes = 2048;
      expect(await failure(caller({ maxResponseBytes: 1000 })(app, "weather", "/big", get, server))).toEqual({
        code: "too_large",
        message: "The API weather answered more than 1000 bytes, more than Hatch passes on.",
      });
      const fits = await caller({ maxResponseBytes: 4096 })(app, "weather", "/big", get, server);
      expect(fits.body.byteLength).toBe(2048);
    });

    test("an API that does not answer in time is unavailable", async () => {
      const refused = await failure(caller({ timeoutMs: 50 })(app, "weather", "/slow", get, server));
      api.release();
      expect(refused).toEqual({ code: "unavailable", message: "The API weather did not answer within 0.1 s." });
    });

    test("loopback, private and metadata addresses are refused unless API_PRIVATE_HOSTS; nothing is sent", async () => {
      const before = api.requests.length;
      expect((await failure(caller({}, false)(app, "weather", "/echo", get, server))).code).toBe("forbidden");
      const resolving = (addresses: string[]) => caller({ resolveHost: async () => addresses }, false);
      const named: HostedApp = {
        ...app,
        site: {
          ...app.site!,
          apis: new Map([["meta", apiRule({ url: "http://metadata.internal.example/latest", secret: "WEATHER_KEY" })]]),
        },
      };
      for (const addresses of [["169.254.169.254"], ["10.0.0.8"], ["93.184.216.34", "::1"], ["fd00::1"]]) {
        expect([addresses, (await failure(resolving(addresses)(named, "meta", "/", get, server))).code]).toEqual([
          addresses,
          "forbidden",
        ]);
      }
      expect(await failure(resolving([])(named, "meta", "/", get, server))).toEqual({
        code: "unavailable",
        message: "The host of the API meta (metadata.internal.example) does not resolve.",
      });
      expect(api.requests.length).toBe(before);
    });

    test("nothing logged carries a secret value", () => {
      const all = logs.join("\n");
      expect(all).toContain("declared API call");
      expect(all).not.toContain(WEATHER_KEY);
      expect(all).not.toContain(CRM_TOKEN);
      expect(all).not.toContain(encodeURIComponent(CRM_TOKEN));
    });
  });
});

describe("apiUrl", () => {
  const rule: ApiRule = apiRule({ url: "https://api.example.com/v1/", secret: "K", in: { query: "key" } });

  test("appends the path and query under the base url", () => {
    expect(apiUrl("x", rule, "/items/a%20b?q=1&r=%2F").href).toBe("https://api.example.com/v1/items/a%20b?q=1&r=%2F");
    expect(apiUrl("x", rule, "").href).toBe("https://api.example.com/v1");
    expect(apiUrl("x", rule, "?q=1").href).toBe("https://api.example.com/v1?q=1");
    expect(apiUrl("x", rule, "/a/..b/c.d").href).toBe("https://api.example.com/v1/a/..b/c.d");
  });

  test("refuses whatever could leave it", () => {
    for (const path of [
      "https://evil.example/",
      "evil",
      "//evil.example/x",
      "/../x",
      "/a/../../x",
      "/%2e%2e/x",
      "/%2E./x",
      "/a%2F..%2F..",
      "/a\\..",
      "/a b",
      "/a\n",
      "/a#frag",
      "/%zz",
      "/.",
      "?key=mine",
    ]) {
      expect([
        path,
        (() => {
          try {
            apiUrl("x", rule, path);
            return "allowed";
          } catch (error) {
            return (error as DataError).code;
          }
        })(),
      ]).toEqual([path, "invalid"]);
    }
  });
});
