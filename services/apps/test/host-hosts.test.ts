import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rawStatus, startTestHost, type TestHost } from "./support/host.ts";
import { seedApp } from "./support/seed.ts";

// Odd Host values reach the app host as they are (a proxy in front may pass them on): each gets a clean answer,
// an app for the ways of writing its name (case, a trailing dot), 404 for everything else; never a 500.
describe("app host: Host header values", () => {
  let t: TestHost;
  const lines: string[] = [];
  beforeAll(async () => {
    t = await startTestHost({ logWrite: (line) => lines.push(line) });
    await seedApp(t.ctx, { address: "x", visibility: "public", files: { "index.html": "<h1>X</h1>" } });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  test("with a port in the apps domain (localhost:<port>)", async () => {
    const p = t.port;
    const table: [string | null, number][] = [
      [`x.localhost:${p}`, 200],
      [`X.LOCALHOST:${p}`, 200],
      [`x.localhost:${p}.`, 200],
      [`x.localhost.:${p}`, 200],
      [`localhost:${p}`, 404],
      [`localhost:${p}.`, 404],
      [`nope.localhost:${p}`, 404],
      [`x.localhost`, 404],
      [`x.localhost:`, 404],
      [`x.localhost:1`, 404],
      [`x.localhost:99999999999`, 404],
      [`x.localhost:${p}:${p}`, 404],
      [`x.localhost:abc`, 404],
      [`x.localhost:${p}..`, 404],
      [`x..localhost:${p}`, 404],
      [`.x.localhost:${p}`, 404],
      [`.localhost:${p}`, 404],
      [`a.x.localhost:${p}`, 404],
      [`-x.localhost:${p}`, 404],
      [`${"a".repeat(64)}.localhost:${p}`, 404],
      [`${"a.".repeat(200)}localhost:${p}`, 404],
      [`x y.localhost:${p}`, 404],
      [`x.localhost:${p}/evil`, 404],
      [`x.localhost:${p}?q`, 404],
      [`x.localhost:${p}#f`, 404],
      [`user@x.localhost:${p}`, 404],
      [`%78.localhost:${p}`, 404],
      [`[::1]:${p}`, 404],
      ["[::1]", 404],
      ["[", 404],
      ["[::1", 404],
      ["127.0.0.1", 404],
      [".", 404],
      ["..", 404],
      ["", 404],
      [null, 400],
    ];
    const seen: [string | null, number][] = [];
    for (const [host] of table) seen.push([host, await rawStatus(p, host, "/")]);
    expect(seen).toEqual(table);
    expect(lines.filter((line) => JSON.parse(line).level === "error")).toEqual([]);
  });

  test("without a port in the apps domain, any port is accepted and a trailing dot is the same name", async () => {
    const saved = t.ctx.config;
    t.ctx.config = { ...saved, appsDomain: "apps.test" };
    try {
      const table: [string, number][] = [
        ["x.apps.test", 200],
        ["x.apps.test.", 200],
        ["X.Apps.Test:8080", 200],
        ["x.apps.test.:443", 200],
        ["x.apps.test:443.", 200],
        ["apps.test.", 404],
        ["x.apps.test..", 404],
        ["x.apps.test:", 404],
        ["x.apps.test:http", 404],
        ["x.other.test", 404],
        ["x.apps.test.evil.example", 404],
      ];
      const seen: [string, number][] = [];
      for (const [host] of table) seen.push([host, await rawStatus(t.port, host, "/")]);
      expect(seen).toEqual(table);
      expect(lines.filter((line) => JSON.parse(line).level === "error")).toEqual([]);
    } finally {
      t.ctx.config = saved;
    }
  });
});
