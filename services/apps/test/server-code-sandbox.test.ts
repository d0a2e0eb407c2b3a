import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readAppLogs } from "../src/app-logs.ts";
import { DataClient, member, owner, ownerSeed } from "./support/collections.ts";
import { startTestHost, type TestHost } from "./support/host.ts";
import { seedApp, type SeededApp } from "./support/seed.ts";

// Server code over real HTTP on the app host: the request and Response shapes, the web globals, what the sandbox
// refuses (process, require, import, fetch), the limits (CPU, wall time with a test-sized limit, memory), and that the
// app host and other apps keep answering while one app's code misbehaves.

/** URL edits, run in the sandbox and natively: a URL of a string parsed before is not changed by edits of another. */
function urlCases(Url: typeof URL) {
  const href = "https://Example.com:443/a/./b?x=1#f";
  const first = new Url(href);
  const edited = new Url(href);
  edited.hostname = "Other.Example";
  edited.port = "8080";
  edited.pathname = "/c d/../e";
  edited.search = "y=2";
  edited.hash = "g";
  edited.searchParams.append("z", "3 4");
  const again = new Url(href);
  const relative = new Url("../x?q#top", again);
  const empty = new Url("https://a.example/x?#");
  const cleared = new Url("https://a.example/x?q=1#f");
  cleared.search = "?";
  cleared.hash = "#";
  const removed = new Url("https://a.example/x?#");
  removed.search = "";
  removed.hash = "";
  return {
    empty: [empty.href, empty.search, empty.hash, [...empty.searchParams]],
    cleared: [cleared.href, cleared.search, cleared.hash],
    removed: removed.href,
    first: first.href,
    edited: edited.href,
    again: again.href,
    parts: [edited.origin, edited.host, edited.port, edited.search, [...edited.searchParams]],
    relative: [relative.href, relative.pathname, relative.search, relative.hash],
  };
}

const HANDLER = `
${urlCases.toString()}
let served = 0;
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    served++;
    switch (url.pathname) {
      case "/api/hello": return new Response("hello " + (url.searchParams.get("name") ?? "world"));
      case "/api/echo": return Response.json({ method: request.method, body: await request.text(), type: request.headers.get("content-type"), cookie: request.headers.get("cookie"), viewer: env.viewer, served });
      case "/api/bytes": return new Response(new Uint8Array([0, 1, 2, 255]), { status: 201, headers: { "content-type": "application/octet-stream", "x-custom": "yes" } });
      case "/api/globals": {
        const params = new URLSearchParams("a=1&b=x+y");
        params.append("c", "é");
        const bytes = new TextEncoder().encode("héllo");
        return Response.json({
          url: new URL("../x?q=1#h", "https://example.com/a/b").href,
          params: params.toString(),
          decoded: new TextDecoder().decode(bytes),
          length: bytes.length,
          base64: btoa("hi!"), unbase64: atob("aGkh"),
          uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(crypto.randomUUID()),
          random: crypto.getRandomValues(new Uint8Array(8)).length,
          headers: [...new Headers({ B: "2", a: "1" })],
          waited: await new Promise((resolve) => setTimeout(() => resolve("yes"), 5)),
        });
      }
      case "/api/url": return Response.json(urlCases(URL));
      case "/api/forbidden": return Response.json({ process: typeof process, require: typeof require, Bun: typeof Bun, Deno: typeof Deno });
      case "/api/require": return new Response(require("fs"));
      case "/api/fetch": return await fetch("https://example.com/");
      case "/api/throw": throw new TypeError("no such thing");
      case "/api/loop": while (true) {}
      case "/api/timers": while (true) await new Promise((resolve) => setTimeout(resolve, 10));
      case "/api/never": return await new Promise(() => {});
      case "/api/memory": { const big = new Float64Array(8e6); return new Response(String(big.length)); }
      case "/api/log":
        console.debug("a debug line"); console.log("an info line", { n: 1 }); console.warn("a warning"); console.error(new Error("an error"));
        return new Response("logged");
      case "/api/chatty": for (let i = 0; i < 150; i++) console.log("line " + i); return new Response("ok");
      case "/api/nothing": return "not a response";
      default: return new Response("not found", { status: 404 });
    }
  },
};`;

describe("server code: the sandbox on the app host", () => {
  let t: TestHost;
  let data: DataClient;
  let app: SeededApp;
  let other: SeededApp;

  beforeAll(async () => {
    t = await startTestHost({ serverCode: { limits: { wallMs: 400 }, workers: 2 } });
    data = new DataClient(t);
    const config = { server: "api/index.js" };
    app = await seedApp(t.ctx, {
      ...ownerSeed,
      address: "sandboxed",
      files: { "index.html": "<h1>hi</h1>", "api/index.js": HANDLER },
      config,
    });
    other = await seedApp(t.ctx, {
      ...ownerSeed,
      address: "bystander",
      files: {
        "index.html": "<h1>other</h1>",
        "server.js": `export default { fetch: () => new Response("still here") }`,
      },
      config: { server: "server.js" },
    });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  const get = (path: string, init?: RequestInit) => t.get("sandboxed", path, init);
  async function logs(appId = app.id) {
    await t.host.flushLogs();
    return (await readAppLogs(t.ctx.db, appId, undefined, 100)).lines.map((line) => `${line.level} ${line.message}`);
  }

  test("a handler answers /api/… with its Response: text, status, headers and bytes", async () => {
    const hello = await get("/api/hello?name=Ada");
    expect(hello.status).toBe(200);
    expect(await hello.text()).toBe("hello Ada");
    expect(hello.headers.get("content-type")).toBe("text/plain;charset=UTF-8");
    const bytes = await get("/api/bytes");
    expect(bytes.status).toBe(201);
    expect(bytes.headers.get("x-custom")).toBe("yes");
    expect([...new Uint8Array(await bytes.arrayBuffer())]).toEqual([0, 1, 2, 255]);
    expect((await get("/api/missing")).status).toBe(404);
  });

  test("the request carries method, body and headers; Hatch's viewer cookie is taken out; env.viewer is the verified viewer", async () => {
    const cookie = `${data.cookie("sandboxed", member)}; theme=dark`;
    const answer = await get("/api/echo", {
      method: "POST",
      body: "some text",
      headers: { cookie, "content-type": "text/plain" },
    });
    const body = (await answer.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      method: "POST",
      body: "some text",
      type: "text/plain",
      cookie: "theme=dark",
      viewer: { email: member.email },
    });
    // From another origin the request still runs, without the viewer.
    const foreign = await get("/api/echo", {
      method: "POST",
      body: "x",
      headers: { cookie, origin: "https://elsewhere.example" },
    });
    expect(((await foreign.json()) as { viewer: unknown }).viewer).toBeNull();
  });

  test("module globals persist between requests of one version", async () => {
    const first = ((await (await get("/api/echo")).json()) as { served: number }).served;
    const second = ((await (await get("/api/echo")).json()) as { served: number }).served;
    expect(second).toBeGreaterThan(first);
  });

  test("the web globals work: URL, URLSearchParams, TextEncoder/Decoder, atob/btoa, crypto, Headers, setTimeout", async () => {
    const body = await (await get("/api/globals")).json();
    expect(body).toEqual({
      url: "https://example.com/x?q=1#h",
      params: "a=1&b=x+y&c=%C3%A9",
      decoded: "héllo",
      length: 6,
      base64: "aGkh",
      unbase64: "hi!",
      uuid: true,
      random: 8,
      headers: [
        ["a", "1"],
        ["b", "2"],
      ],
      waited: "yes",
    });
  });

  test("URL in the sandbox reads and edits as the platform's does; edits of one URL leave others of the same string", async () => {
    const body = await (await get("/api/url")).json();
    expect(body).toEqual(JSON.parse(JSON.stringify(urlCases(URL))));
    expect((body as { again: string }).again).toBe("https://example.com/a/b?x=1#f");
  });

  test("process, require, Bun and Deno do not exist; require and fetch fail with a message", async () => {
    expect(await (await get("/api/forbidden")).json()).toEqual({
      process: "undefined",
      require: "undefined",
      Bun: "undefined",
      Deno: "undefined",
    });
    const required = await get("/api/require");
    expect(required.status).toBe(500);
    const fetched = await get("/api/fetch");
    expect(fetched.status).toBe(500);
    const body = (await fetched.json()) as { error: { code: string; message: string } };
    expect(body.error.message).toContain("tool_logs");
    expect(JSON.stringify(body)).not.toContain("at fetch");
    const lines = await logs();
    expect(
      lines.some((l) => l.startsWith("error GET /api/require: uncaught ReferenceError") && l.includes("require")),
    ).toBe(true);
    expect(lines.some((l) => l.includes("fetch is not available in Hatch server code") && l.includes("env.api"))).toBe(
      true,
    );
  });

  test("an uncaught error is a 500 without a stack for the browser and an error line with the stack for the owner", async () => {
    const answer = await get("/api/throw");
    expect(answer.status).toBe(500);
    expect(await answer.text()).not.toContain("no such thing");
    expect((await logs()).find((l) => l.includes("TypeError: no such thing"))).toContain("api/index.js:");
    const wrong = await get("/api/nothing");
    expect(wrong.status).toBe(500);
    expect((await logs()).some((l) => l.includes("must return a Response"))).toBe(true);
  });

  test("an infinite loop is stopped at the CPU limit while the app host and other apps keep answering", async () => {
    const looping = get("/api/loop");
    const [bystander, page] = await Promise.all([t.get("bystander", "/api/x"), get("/")]);
    expect(await bystander.text()).toBe("still here");
    expect(page.status).toBe(200);
    const stopped = await looping;
    expect(stopped.status).toBe(500);
    expect(await logs()).toContain("error GET /api/loop: stopped after 200 ms of CPU time (the limit per request).");
    // The app answers again (a fresh instance).
    expect(await (await get("/api/hello")).text()).toBe("hello world");
  }, 30_000);

  test("a loop of expensive built-ins that starves QuickJS's interrupt check is stopped by the worker watchdog", async () => {
    const hog = await seedApp(t.ctx, {
      ...ownerSeed,
      address: "hog",
      files: {
        "index.html": "x",
        "s.js": `export default { fetch() { const a = []; while (true) a.push("x".repeat(1 << 20) + a.length); } }`,
      },
      config: { server: "s.js" },
    });
    const stuck = t.get("hog", "/api");
    // The app host's own thread keeps serving pages meanwhile.
    expect((await get("/")).status).toBe(200);
    expect((await stuck).status).toBe(500);
    expect(await logs(hog.id)).toContain("error GET /api: stopped after 200 ms of CPU time (the limit per request).");
    expect(await (await get("/api/hello")).text()).toBe("hello world");
    // The watchdog waits for CPU time, not wall time: on a busy machine that takes longer.
  }, 30_000);

  test("a handler that keeps waiting hits the wall-time limit (504); one that awaits nothing pending fails at once", async () => {
    const waiting = await get("/api/timers");
    expect(waiting.status).toBe(504);
    const never = await get("/api/never");
    expect(never.status).toBe(500);
    const lines = await logs();
    expect(lines).toContain(
      "error GET /api/timers: stopped after 0.4 s: the request took longer than its time limit (its timers never fire).",
    );
    expect(lines.some((l) => l.startsWith("error GET /api/never: fetch's promise can never settle"))).toBe(true);
  });

  test("a memory bomb is stopped at the memory limit", async () => {
    const answer = await get("/api/memory");
    expect(answer.status).toBe(500);
    expect(await logs()).toContain("error GET /api/memory: stopped: it used more than 32 MB of memory.");
    expect((await t.get("bystander", "/api/")).status).toBe(200);
  });

  test("console lines land in the app's logs with their levels; at most 100 per request, then one line says how many were dropped", async () => {
    await get("/api/log");
    const lines = await logs();
    expect(lines).toContain("debug a debug line");
    expect(lines).toContain('info an info line {"n":1}');
    expect(lines).toContain("warn a warning");
    expect(lines.some((l) => l.startsWith("error Error: an error"))).toBe(true);
    await get("/api/chatty");
    await t.host.flushLogs();
    const after = (await readAppLogs(t.ctx.db, app.id, undefined, 100)).lines.map((l) => l.message);
    expect(after.at(-1)).toBe(
      "50 more log lines of this request were dropped (at most 100 lines per request are kept).",
    );
    expect(after.at(-2)).toBe("line 99");
  });

  test("the server module is not served as a file; without server code /api paths are files as before", async () => {
    expect((await t.get("bystander", "/server.js")).status).toBe(404);
    const plain = await seedApp(t.ctx, {
      ...ownerSeed,
      address: "plain-api",
      files: { "index.html": "x", "api/data.json": '{"a":1}' },
    });
    expect(await (await t.get(plain.address, "/api/data.json")).json()).toEqual({ a: 1 });
    expect((await t.get(plain.address, "/api/other", { method: "POST" })).status).toBe(405);
  });

  test("a non-public app's /api needs a viewer who may open it (JSON 403, no redirect)", async () => {
    await seedApp(t.ctx, {
      ...ownerSeed,
      address: "private-api",
      visibility: "private",
      files: { "index.html": "x", "s.js": `export default { fetch: (r, env) => Response.json(env.viewer) }` },
      config: { server: "s.js" },
    });
    const anonymous = await t.get("private-api", "/api/me");
    expect(anonymous.status).toBe(403);
    expect(((await anonymous.json()) as { error: { code: string } }).error.code).toBe("forbidden");
    const mine = await t.get("private-api", "/api/me", { headers: { cookie: data.cookie("private-api", owner) } });
    expect(await mine.json()).toEqual({ email: owner.email, name: owner.name });
  });

  test("an import is refused with a message when the module loads", async () => {
    const importer = await seedApp(t.ctx, {
      ...ownerSeed,
      address: "importer",
      files: {
        "index.html": "x",
        "s.js": `import fs from "node:fs"; export default { fetch: () => new Response("x") }`,
      },
      config: { server: "s.js" },
    });
    const answer = await t.get("importer", "/api");
    expect(answer.status).toBe(500);
    const lines = await logs(importer.id);
    expect(lines.some((l) => l.includes('import "node:fs" is not available: Hatch server code is one file'))).toBe(
      true,
    );
  });

  test("other apps' lines never mix in", async () => {
    expect(await logs(other.id)).toEqual([]);
  });
});
