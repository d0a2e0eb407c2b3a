import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { DATA_ERROR_STATUS } from "../src/spec/data-rules.ts";
import { developerReference } from "../src/reference/reference.ts";
import { EXAMPLE_APP } from "../src/reference/example-app.ts";
import { ServiceJsonSchema } from "../src/spec/service-json.ts";
import { acceptsGzip } from "../src/client/serve.ts";
import type { Hatch } from "../src/client/hatch.d.ts";
import { hasChromium, launchChromium } from "../../../test/support/chromium.ts";
import { startTestHost, type TestHost } from "./support/host.ts";
import { seedApp } from "./support/seed.ts";

// The browser library on an app's origin: the three files, their headers and sizes, caching, and the library itself
// running in a page (headless Chromium) and as a module (Bun).

const FILES = [
  ["client.js", "text/javascript; charset=utf-8"],
  ["client.mjs", "text/javascript; charset=utf-8"],
  ["client.d.ts", "application/typescript; charset=utf-8"],
] as const;
const CODES = Object.keys(DATA_ERROR_STATUS);
const PAGE = `<!doctype html><html><head><title>Lib</title><script src="/_hatch/client.js"></script></head><body><h1>Lib</h1></body></html>`;

let test_: TestHost;
let address = "";
let example = "";
const url = (path: string) => `${test_.origin(address)}${path}`;

beforeAll(async () => {
  test_ = await startTestHost();
  address = (await seedApp(test_.ctx, { visibility: "public", files: { "index.html": PAGE } })).address;
  // The reference's example app, stored the way a publish stores it (service.json parsed).
  const config = ServiceJsonSchema.parse(JSON.parse(EXAMPLE_APP["service.json"]));
  example = (await seedApp(test_.ctx, { visibility: "public", files: EXAMPLE_APP, config })).address;
}, 60_000);
afterAll(async () => {
  await test_?.close();
});

describe("served files", () => {
  for (const [name, contentType] of FILES) {
    test(`${name}: its type, a public 5-minute cache, an ETag, and a gzip copy under 10 KB`, async () => {
      const plain = await fetch(url(`/_hatch/${name}`), { headers: { "Accept-Encoding": "identity" } });
      expect(plain.status).toBe(200);
      expect(plain.headers.get("content-type")).toBe(contentType);
      expect(plain.headers.get("cache-control")).toBe("public, max-age=300");
      expect(plain.headers.get("vary")).toBe("Accept-Encoding");
      expect(plain.headers.get("content-encoding")).toBeNull();
      expect(plain.headers.get("etag")).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
      const text = await plain.text();
      expect(text.length).toBeGreaterThan(1000);

      const zipped = await fetch(url(`/_hatch/${name}`), {
        headers: { "Accept-Encoding": "gzip, deflate" },
        decompress: false,
      });
      expect(zipped.headers.get("content-encoding")).toBe("gzip");
      expect(zipped.headers.get("etag")).toBe(`${plain.headers.get("etag")!.slice(0, -1)}-gz"`);
      const bytes = new Uint8Array(await zipped.arrayBuffer());
      expect(Number(zipped.headers.get("content-length"))).toBe(bytes.byteLength);
      expect(bytes.byteLength).toBeLessThan(10 * 1024);
      expect(new TextDecoder().decode(Bun.gunzipSync(bytes))).toBe(text);
    });
  }

  test("a matching If-None-Match answers 304 without a body, for either encoding's ETag and its weak form", async () => {
    const first = await fetch(url("/_hatch/client.js"), { headers: { "Accept-Encoding": "identity" } });
    const etag = first.headers.get("etag")!;
    for (const given of [etag, `W/${etag}`, `"other", ${etag}`, `${etag.slice(0, -1)}-gz"`]) {
      const again = await fetch(url("/_hatch/client.js"), {
        headers: { "If-None-Match": given, "Accept-Encoding": "identity" },
      });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe("");
      expect(again.headers.get("etag")).toBe(etag);
    }
    const changed = await fetch(url("/_hatch/client.js"), { headers: { "If-None-Match": '"not-this-one"' } });
    expect(changed.status).toBe(200);
  });

  test("HEAD answers the headers and length without a body", async () => {
    const head = await fetch(url("/_hatch/client.mjs"), { method: "HEAD", headers: { "Accept-Encoding": "identity" } });
    const get = await fetch(url("/_hatch/client.mjs"), { headers: { "Accept-Encoding": "identity" } });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(Number(head.headers.get("content-length"))).toBe((await get.arrayBuffer()).byteLength);
    expect(await head.text()).toBe("");
  });

  test("other methods are refused with 405 and Allow; other names under /_hatch/client. are not_found", async () => {
    for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
      const refused = await fetch(url("/_hatch/client.js"), { method, body: method === "DELETE" ? undefined : "x" });
      expect(refused.status).toBe(405);
      expect(refused.headers.get("allow")).toBe("GET, HEAD");
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("invalid");
    }
    for (const path of ["/_hatch/client.css", "/_hatch/client.", "/_hatch/client.js.map", "/_hatch/client.JS"]) {
      const missing = await fetch(url(path));
      expect(missing.status).toBe(404);
      const body = (await missing.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("not_found");
      expect(body.error.message).toContain("/_hatch/client.js");
    }
  });

  test("the d.ts is the hand-written types file; the scripts import nothing and only the module exports", async () => {
    const types = await (await fetch(url("/_hatch/client.d.ts"))).text();
    expect(types).toBe(readFileSync(join(import.meta.dir, "../src/client/hatch.d.ts"), "utf8"));
    const script = await (await fetch(url("/_hatch/client.js"))).text();
    const module = await (await fetch(url("/_hatch/client.mjs"))).text();
    for (const code of [script, module]) {
      expect(code).not.toMatch(/^\s*import\b/m);
      expect(code).not.toContain(": Promise<");
    }
    expect(script).not.toMatch(/^\s*export\b/m);
    expect(script).toContain("window.hatch = hatch;");
    expect(module.match(/^export\b.*$/gm)).toEqual(["export { hatch as default, me, signIn, db, files, api, ai };"]);
  });

  test("Accept-Encoding: gzip only when named or * without q=0", () => {
    const cases: [string | null, boolean][] = [
      [null, false],
      ["", false],
      ["identity", false],
      ["gzip", true],
      ["br, gzip;q=0.5", true],
      ["GZIP", true],
      ["gzip;q=0", false],
      ["gzip; q=0.0", false],
      ["*", true],
      ["*;q=0, gzip", true],
      ["gzip;q=0, *", false],
      ["deflate, br", false],
    ];
    for (const [header, expected] of cases) expect([header, acceptsGzip(header)]).toEqual([header, expected]);
  });
});

describe("the library outside a browser page", () => {
  test("every function the types declare is shown in the developer reference", () => {
    const types = readFileSync(join(import.meta.dir, "../src/client/hatch.d.ts"), "utf8");
    const reference = developerReference("browser_library");
    const methods = [...types.matchAll(/^ {2}(\w+)(?:<[^>]*>)?\(/gm)].map((m) => m[1]!);
    expect(methods.sort()).toEqual([
      "add",
      "api",
      "chat",
      "db",
      "files",
      "get",
      "list",
      "list",
      "me",
      "remove",
      "remove",
      "signIn",
      "subscribe",
      "update",
      "upload",
      "url",
    ]);
    for (const method of methods) expect([method, reference.includes(`.${method}(`)]).toEqual([method, true]);
  });

  test("the module has a default export and the named exports me, signIn, db, files, api, ai", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hatch-client-"));
    try {
      const file = join(dir, "client.mjs");
      writeFileSync(file, await (await fetch(url("/_hatch/client.mjs"))).text());
      const module = (await import(file)) as Record<string, unknown> & { default: Hatch };
      expect(Object.keys(module).sort()).toEqual(["ai", "api", "db", "default", "files", "me", "signIn"]);
      for (const name of ["me", "signIn", "db", "files", "api", "ai"] as const)
        expect(module[name]).toBe(module.default[name]);
      expect(module.default.files("b").url("abc")).toBe("/_hatch/files/b/abc");
      expect(module.default.files("my photos").url("a/b")).toBe("/_hatch/files/my%20photos/a%2Fb");
      const collection = module.default.db("todos");
      expect(Object.keys(collection).sort()).toEqual(["add", "get", "list", "remove", "subscribe", "update"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the classic script defines window.hatch and nothing else global", async () => {
    const script = await (await fetch(url("/_hatch/client.js"))).text();
    const window: Record<string, unknown> = {};
    new Function("window", script)(window);
    expect(Object.keys(window)).toEqual(["hatch"]);
    expect(Object.keys(window.hatch as object).sort()).toEqual(["ai", "api", "db", "files", "me", "signIn"]);
  });
});

describe.skipIf(!hasChromium)("in headless Chromium", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  test("a page with <script src=/_hatch/client.js>: anonymous me() is null, a refused add is an Error with a code, url() is sync", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(url("/"));
    expect(await page.locator("h1").innerText()).toBe("Lib");
    const result = await page.evaluate(async () => {
      const me = await hatch.me();
      let failure: { isError: boolean; code: unknown; message: string } | null = null;
      try {
        await hatch.db("x").add({ text: "hello" });
      } catch (error) {
        failure = {
          isError: error instanceof Error,
          code: (error as { code?: unknown }).code,
          message: (error as Error).message,
        };
      }
      return { me, failure, url: hatch.files("b").url("abc"), same: window.hatch === hatch };
    });
    expect(result.me).toBeNull();
    expect(result.failure).not.toBeNull();
    expect(result.failure!.isError).toBe(true);
    expect(CODES).toContain(result.failure!.code as string);
    expect(result.failure!.message.length).toBeGreaterThan(0);
    expect(result.url).toBe("/_hatch/files/b/abc");
    expect(result.same).toBe(true);
    await context.close();
  });

  test("the reference's example app runs: an anonymous viewer gets its sign-in button, which goes to /_hatch/signin", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    await page.goto(`${test_.origin(example)}/`);
    const button = page.getByRole("button", { name: "Sign in to keep a list" });
    await button.waitFor();
    expect(await page.locator("#add").isHidden()).toBe(true);
    const signIn = page.waitForRequest((request) => new URL(request.url()).pathname === "/_hatch/signin");
    await context.route(`${test_.ctx.config.gatewayUrl}/**`, (route) =>
      route.fulfill({ status: 200, contentType: "text/html", body: "<h1>Sign in</h1>" }),
    );
    await button.click();
    expect(new URL((await signIn).url()).search).toBe("?path=%2F");
    expect(errors).toEqual([]);
    await context.close();
  });

  test("an unreachable server rejects with code unavailable", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(url("/"));
    await context.route("**/_hatch/me", (route) => route.abort("connectionrefused"));
    const failure = await page.evaluate(() =>
      hatch.me().then(
        () => null,
        (error: { code: string; status: number; name: string }) => ({
          code: error.code,
          status: error.status,
          name: error.name,
        }),
      ),
    );
    expect(failure).toEqual({ code: "unavailable", status: 0, name: "HatchError" });
    await context.close();
  });

  test("an answer without Hatch's error body (a proxy's page) gets its code from the status", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(url("/"));
    const statuses: [number, string][] = [
      [413, "too_large"],
      [429, "limit_exceeded"],
      [502, "unavailable"],
      [403, "forbidden"],
      [400, "invalid"],
    ];
    for (const [status, code] of statuses) {
      await context.unrouteAll();
      await context.route("**/_hatch/db/**", (route) =>
        route.fulfill({ status, contentType: "text/html", body: "<h1>Proxy error</h1>" }),
      );
      const failure = await page.evaluate(() =>
        hatch
          .db("todos")
          .list()
          .then(
            () => null,
            (error: { code: string; status: number; message: string }) => ({
              code: error.code,
              status: error.status,
              message: error.message,
            }),
          ),
      );
      expect(failure).toEqual({
        code,
        status,
        message: `The app's server answered HTTP ${status}. Try again in a moment.`,
      });
    }
    await context.close();
  });

  test("subscribe passes each change event to the callback, and a refused stream to onError with its code", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(url("/"));
    const refused = await page.evaluate(
      () =>
        new Promise<{ code: string; message: string }>((resolve) =>
          hatch.db("x").subscribe(
            () => {},
            (error) => resolve({ code: error.code, message: error.message }),
          ),
        ),
    );
    expect(CODES).toContain(refused.code);
    expect(refused.message.length).toBeGreaterThan(0);

    const document = {
      id: "d1",
      createdAt: "2025-01-01T00:00:00.000Z",
      updatedAt: "2025-01-01T00:00:00.000Z",
      createdBy: null,
      text: "hi",
    };
    const stream = `retry: 60000\n: ready\n\nevent: change\ndata: ${JSON.stringify({ type: "added", id: "d1", document })}\n\nevent: change\ndata: {"type":"removed","id":"d1"}\n\n`;
    await context.route("**/_hatch/db/todos/_changes", (route) =>
      route.fulfill({ status: 200, contentType: "text/event-stream", body: stream }),
    );
    const changes = await page.evaluate(
      () =>
        new Promise<unknown[]>((resolve) => {
          const seen: unknown[] = [];
          const stop = hatch.db("todos").subscribe((change) => {
            seen.push(change);
            if (seen.length === 2) {
              stop();
              resolve(seen);
            }
          });
        }),
    );
    expect(changes).toEqual([
      { type: "added", id: "d1", document },
      { type: "removed", id: "d1" },
    ]);
    await context.close();
  });
});
