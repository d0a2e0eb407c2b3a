import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import { readAppLogs } from "../src/app-logs.ts";
import { ownerSeed } from "./support/collections.ts";
import { startsFile } from "./support/failing-worker.ts";
import { startTestHost, type TestHost } from "./support/host.ts";
import { seedApp, type SeededApp } from "./support/seed.ts";

// A request lost when the watchdog stops a shared worker: if another app's code got the worker stopped, the answer
// and the app's log say it was Hatch's failure, nothing in the app's code caused it, and a retry is safe; if the app's
// own other request did, they say that. One shared worker, so every app here shares it until it is quarantined.

const WAITER = `
export default {
  async fetch(request, env) {
    const path = new URL(request.url).pathname;
    if (path === "/api/read-wait") await env.db("notes").list({ limit: 1 });
    if (path.endsWith("wait")) await new Promise((resolve) => setTimeout(resolve, 2500));
    return new Response("waited");
  },
};`;
const HOG = `
export default {
  async fetch(request) {
    const path = new URL(request.url).pathname;
    if (path === "/api/wait") await new Promise((resolve) => setTimeout(resolve, 2500));
    if (path === "/api/hog") { const a = []; while (true) a.push("x".repeat(1 << 20) + a.length); }
    return new Response("fine");
  },
};`;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("server code: a lost request says whose failure it was", () => {
  let t: TestHost;
  let waiter: SeededApp;
  let hog: SeededApp;
  let selfish: SeededApp;
  let hog2: SeededApp;

  beforeAll(async () => {
    t = await startTestHost({ serverCode: { workers: 1 }, env: { DATA_REQUESTS_PER_MINUTE: "100000" } });
    const seed = (address: string, source: string) =>
      seedApp(t.ctx, {
        ...ownerSeed,
        address,
        files: { "index.html": "x", "s.js": source },
        config: { server: "s.js", collections: { notes: { read: "anyone" } } },
      });
    waiter = await seed("waiter", WAITER);
    hog = await seed("hog", HOG);
    selfish = await seed("selfish", HOG);
    hog2 = await seed("hog-two", HOG);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  async function logs(appId: string): Promise<string[]> {
    await t.host.flushLogs();
    return (await readAppLogs(t.ctx.db, appId, undefined, 100)).lines.map((line) => `${line.level} ${line.message}`);
  }

  /** Starts a waiting request on a warm instance, then sends `stuck` into the same worker. */
  async function loseWaiting(
    app: string,
    stuck: string,
    path = "/api/wait",
  ): Promise<{ waiting: Response; stopped: Response }> {
    expect((await t.get(app, "/api/warm")).status).toBe(200);
    const waiting = t.get(app, path);
    // The worker takes runs in order: the waiting one is inside its handler before the stuck one starts.
    await pause(300);
    const stopped = await t.get(stuck, "/api/hog");
    return { waiting: await waiting, stopped };
  }

  test("another app's stuck code: Hatch's failure, nothing in this app's code caused it, a retry is safe", async () => {
    const { waiting, stopped } = await loseWaiting("waiter", "hog");
    expect(stopped.status).toBe(500);
    expect(await logs(hog.id)).toContain(
      "error GET /api/hog: stopped after 200 ms of CPU time (the limit per request).",
    );

    expect(waiting.status).toBe(503);
    expect(waiting.headers.get("retry-after")).toBe("1");
    expect(await waiting.json()).toEqual({
      error: {
        code: "unavailable",
        message:
          "Hatch failed while running this app's server code (the sandbox worker running it was restarted); nothing in the app's code caused it. Nothing it did took effect, so a retry is safe.",
      },
    });
    expect(await logs(waiter.id)).toContain(
      "warn GET /api/wait: not answered (503): the sandbox worker running it was restarted. This was Hatch's failure; nothing in the app's code caused it. Nothing it did took effect, so a retry is safe.",
    );
    expect(await (await t.get("waiter", "/api/wait")).text()).toBe("waited");
  }, 60_000);

  test("a lost request that had made env calls says they may have taken effect", async () => {
    const { waiting } = await loseWaiting("waiter", "hog-two", "/api/read-wait");
    expect(waiting.status).toBe(503);
    const retry =
      "It had made 1 env call (env.db, env.files, env.api, env.ai), which may have taken effect; a retry is safe if repeating it is.";
    expect(((await waiting.json()) as { error: { message: string } }).error.message).toEndWith(
      `nothing in the app's code caused it. ${retry}`,
    );
    expect(await logs(waiter.id)).toContain(
      `warn GET /api/read-wait: not answered (503): the sandbox worker running it was restarted. This was Hatch's failure; nothing in the app's code caused it. ${retry}`,
    );
    expect(await logs(hog2.id)).toContain(
      "error GET /api/hog: stopped after 200 ms of CPU time (the limit per request).",
    );
  }, 60_000);

  test("the app's own other request got the worker stopped: the answer and the log say so", async () => {
    const { waiting } = await loseWaiting("selfish", "selfish");
    expect(waiting.status).toBe(503);
    expect(((await waiting.json()) as { error: { message: string } }).error.message).toBe(
      "This app's server code was stopped while answering: another of its requests ran too long. Try again.",
    );
    const lines = await logs(selfish.id);
    expect(lines).toContain(
      "error GET /api/wait: stopped without an answer: another request of this app ran past the CPU limit inside one built-in, and the sandbox worker running both was stopped.",
    );
    expect(lines.join("\n")).not.toContain("Hatch's failure");
  }, 60_000);
});

describe("server code: workers that fail as they start", () => {
  let t: TestHost;
  const starts = startsFile(process.pid);

  beforeAll(async () => {
    rmSync(starts, { force: true });
    t = await startTestHost({
      serverCode: { workers: 1, workerUrl: new URL("./support/failing-worker.ts", import.meta.url) },
    });
    await seedApp(t.ctx, {
      ...ownerSeed,
      address: "broken-engine",
      files: { "index.html": "x", "s.js": "export default { fetch: () => new Response('never') };" },
      config: { server: "s.js" },
    });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    rmSync(starts, { force: true });
  });

  const startsSoFar = () => readFileSync(starts, "utf8").split("\n").filter(Boolean).length;

  test("a request is answered 503, a retry is safe, after a few tries rather than waiting on workers that keep failing", async () => {
    const first = await t.get("broken-engine", "/api/x");
    expect(first.status).toBe(503);
    expect(first.headers.get("retry-after")).toBe("1");
    expect(((await first.json()) as { error: { message: string } }).error.message).toBe(
      "Hatch failed while running this app's server code (the sandbox engine (QuickJS) failed); nothing in the app's code caused it. Nothing it did took effect, so a retry is safe.",
    );
    expect(startsSoFar()).toBe(3);
    // Paused, or one more try after the pause: never a worker started again and again.
    expect((await t.get("broken-engine", "/api/x")).status).toBe(503);
    expect(startsSoFar()).toBeLessThanOrEqual(4);
  }, 60_000);
});
