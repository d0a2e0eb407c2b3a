import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { eq } from "drizzle-orm";
import { encodeJson } from "@hatch/platform";
import { newEvent } from "@hatch/contracts";
import { appsTable } from "../src/db/schema.ts";
import { rawStatus, startTestHost, type TestHost, announceAppChange } from "./support/host.ts";
import { seedApp, seedVersion } from "./support/seed.ts";

const sha = (text: string) => createHash("sha256").update(text).digest("hex");

const INDEX = "<!doctype html><title>Site</title><h1>Home</h1>";
const SITE = {
  "index.html": INDEX,
  "about.html": "<h1>About</h1>",
  "docs/index.html": "<h1>Docs</h1>",
  "team/index.html": "<h1>Team</h1>",
  "assets/index-B1a2C3d4.js": "console.log('hashed')",
  "assets/app.css": "body{color:red}",
  "logo.svg": '<svg xmlns="http://www.w3.org/2000/svg"/>',
  "data.json": '{"ok":true}',
  "404.html": "<h1>Lost? Our own 404</h1>",
};

describe("app host: serving files", () => {
  let t: TestHost;
  beforeAll(async () => {
    t = await startTestHost();
    await seedApp(t.ctx, { address: "site", files: SITE });
    await seedApp(t.ctx, {
      address: "spa",
      files: { "index.html": "<h1>SPA shell</h1>", "assets/main-Zx9Yw8Vu.js": "x" },
      config: { spa: true },
    });
    await seedApp(t.ctx, { address: "plain", files: { "index.html": "<h1>Plain</h1>" } });
    await seedApp(t.ctx, {
      address: "custom-404",
      files: { "index.html": "i", "errors/missing.html": "<h1>Custom missing</h1>" },
      config: { notFound: "/errors/missing.html" },
    });
    await seedApp(t.ctx, { address: "empty" });
    await seedApp(t.ctx, { address: "paused", files: { "index.html": "<h1>Paused</h1>" }, paused: true });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  test("the root, a directory and a bare name find their HTML file", async () => {
    for (const [path, body] of [
      ["/", INDEX],
      ["/index.html", INDEX],
      ["/docs/", "<h1>Docs</h1>"],
      ["/about", "<h1>About</h1>"],
      ["/team", "<h1>Team</h1>"],
    ] as const) {
      const response = await t.get("site", path);
      expect({ path, status: response.status, body: await response.text() }).toEqual({ path, status: 200, body });
      expect(response.headers.get("content-type")).toStartWith("text/html");
    }
  });

  test("content type comes from the version's row; nosniff on every file", async () => {
    const cases = {
      "/assets/index-B1a2C3d4.js": "text/javascript",
      "/assets/app.css": "text/css",
      "/logo.svg": "image/svg+xml",
      "/data.json": "application/json",
    };
    for (const [path, type] of Object.entries(cases)) {
      const response = await t.get("site", path);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toStartWith(type);
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      await response.arrayBuffer();
    }
  });

  test("ETag is the quoted sha256; If-None-Match answers 304 without a body", async () => {
    const first = await t.get("site", "/");
    expect(first.headers.get("etag")).toBe(`"${sha(INDEX)}"`);
    await first.text();
    const again = await t.get("site", "/", { headers: { "If-None-Match": `"${sha(INDEX)}"` } });
    expect(again.status).toBe(304);
    expect(again.headers.get("etag")).toBe(`"${sha(INDEX)}"`);
    expect(await again.text()).toBe("");
    const stale = await t.get("site", "/", { headers: { "If-None-Match": `"${sha("older")}"` } });
    expect(stale.status).toBe(200);
    await stale.text();
  });

  test("HEAD answers the headers and length only", async () => {
    const response = await t.get("site", "/", { method: "HEAD" });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-length")).toBe(String(INDEX.length));
    expect(response.headers.get("etag")).toBe(`"${sha(INDEX)}"`);
    expect(await response.text()).toBe("");
  });

  test("cache headers: HTML revalidates, hashed assets are immutable, others are short", async () => {
    const cache = async (path: string) => {
      const response = await t.get("site", path);
      await response.arrayBuffer();
      return response.headers.get("cache-control");
    };
    expect(await cache("/")).toBe("no-cache");
    expect(await cache("/assets/index-B1a2C3d4.js")).toBe("public, max-age=31536000, immutable");
    expect(await cache("/assets/app.css")).toBe("public, max-age=60, must-revalidate");
  });

  test("without spa, an unknown path gets the app's own 404.html with status 404", async () => {
    const response = await t.get("site", "/no/such/page");
    expect(response.status).toBe(404);
    expect(await response.text()).toBe("<h1>Lost? Our own 404</h1>");
    const notFoundKey = await t.get("custom-404", "/nope");
    expect(notFoundKey.status).toBe(404);
    expect(await notFoundKey.text()).toBe("<h1>Custom missing</h1>");
    const plain = await t.get("plain", "/nope");
    expect(plain.status).toBe(404);
    expect(await plain.text()).toContain("This app has no page at this address.");
  });

  test("with spa, unknown extensionless paths get index.html; unknown files still 404", async () => {
    const route = await t.get("spa", "/users/42/settings");
    expect(route.status).toBe(200);
    expect(await route.text()).toBe("<h1>SPA shell</h1>");
    expect(route.headers.get("cache-control")).toBe("no-cache");
    const asset = await t.get("spa", "/assets/missing-Zx9Yw8Vu.js");
    expect(asset.status).toBe(404);
    await asset.text();
    const real = await t.get("spa", "/assets/main-Zx9Yw8Vu.js");
    expect(await real.text()).toBe("x");
  });

  test("paths that try to climb out or smuggle a slash find nothing outside the site", async () => {
    const host = `site.localhost:${t.port}`;
    // Dot segments are resolved by the server before the host sees them, so they can only name a file of the site
    // (`/../index.html` is `/index.html`). Encoded separators, NUL and bad encodings name no file at all.
    const expected: Record<string, number> = {
      "/../index.html": 200,
      "/docs/%2e%2e/about.html": 200,
      "/docs/../../../about.html": 200,
      "/docs%2Findex.html": 404,
      "/docs%2findex.html": 404,
      "/docs%5Cindex.html": 404,
      "/%2e%2e%2f%2e%2e%2fetc%2fpasswd": 404,
      "/a%00b": 404,
      "/bad%E0%A4%A": 404,
      "/docs//index.html": 404,
    };
    for (const [target, status] of Object.entries(expected)) {
      expect({ target, status: await rawStatus(t.port, host, target) }).toEqual({ target, status });
    }
  });

  test("only GET and HEAD", async () => {
    for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
      const response = await t.get("site", "/", { method });
      expect(response.status).toBe(405);
      expect(response.headers.get("allow")).toBe("GET, HEAD");
      await response.text();
    }
  });

  test("an app with nothing published, an unknown address, a paused app, an unknown host", async () => {
    const empty = await t.get("empty", "/");
    expect(empty.status).toBe(404);
    expect(await empty.text()).toContain("Nothing published yet");
    const unknown = await t.get("never-made", "/");
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain("There is no app called &quot;never-made&quot;");
    const paused = await t.get("paused", "/");
    expect(paused.status).toBe(503);
    expect(await paused.text()).toContain("The organization that owns this app has paused it");
    const stranger = await fetch(`http://127.0.0.1:${t.port}/`);
    expect(stranger.status).toBe(404);
    expect(await stranger.text()).toContain("There is nothing at this address.");
  });

  test("the bare apps domain answers its own routes only; uploads wait for their handler", async () => {
    const root = await fetch(`http://localhost:${t.port}/`);
    expect(root.status).toBe(404);
    expect(await root.text()).toContain(`http://my-app.localhost:${t.port}`);
    const upload = await fetch(`http://localhost:${t.port}/_hatch/uploads/${"t".repeat(32)}`, {
      method: "PUT",
      body: "x",
    });
    expect(upload.status).toBe(404);
    expect(await upload.text()).toContain("Uploads are not available");
  });

  test("a new version is served once the change is announced; until then the cached one", async () => {
    const app = await seedApp(t.ctx, { address: "versions", files: { "index.html": "v1" } });
    expect(await (await t.get("versions", "/")).text()).toBe("v1");
    await seedVersion(t.ctx, app.id, { "index.html": "v2" });
    // Cached: the database was not asked again.
    expect(await (await t.get("versions", "/")).text()).toBe("v1");
    await announceAppChange(t.ctx, "versions");
    expect(await (await t.get("versions", "/")).text()).toBe("v2");
  });

  test("another instance's event drops the cached copy here too", async () => {
    const app = await seedApp(t.ctx, { address: "broadcast", files: { "index.html": "before" } });
    expect(await (await t.get("broadcast", "/")).text()).toBe("before");
    await t.ctx.db.update(appsTable).set({ paused: true }).where(eq(appsTable.id, app.id));
    expect((await t.get("broadcast", "/")).status).toBe(200);
    // As another apps instance's outbox relay sends it: straight on the bus, not through this host.
    const heard = new Promise<void>((resolve) => {
      const sub = t.ctx.bus.subscribe("events.apps.app.paused", () => {
        sub.unsubscribe();
        resolve();
      });
    });
    const event = newEvent("apps", null, { entity: "app", verb: "paused", summary: "paused", app: "broadcast" });
    t.ctx.bus.publish("events.apps.app.paused", encodeJson(event));
    await heard;
    expect((await t.get("broadcast", "/")).status).toBe(503);
  });
});

describe("app host: cache TTL", () => {
  let t: TestHost;
  beforeAll(async () => {
    t = await startTestHost({ cacheTtlMs: 0 });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  test("with no TTL left, a change shows without any announcement (the safety net for a missed broadcast)", async () => {
    const app = await seedApp(t.ctx, { address: "ttl", files: { "index.html": "old" } });
    expect(await (await t.get("ttl", "/")).text()).toBe("old");
    await seedVersion(t.ctx, app.id, { "index.html": "new" });
    expect(await (await t.get("ttl", "/")).text()).toBe("new");
  });
});
