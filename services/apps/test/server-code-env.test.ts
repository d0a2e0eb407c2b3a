import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AiChatRequest } from "../src/spec/server-code.ts";
import { and, eq } from "drizzle-orm";
import { DataError } from "../src/http/answers.ts";
import { appLogs, documents } from "../src/db/schema.ts";
import type { ApiCallInit, Outbound, OutboundCaller } from "../src/http/outbound.ts";
import { AppLogWriter, readAppLogs } from "../src/app-logs.ts";
import { DataClient, member, owner, ownerSeed } from "./support/collections.ts";
import { startTestHost, type TestHost } from "./support/host.ts";
import { seedApp, type SeededApp } from "./support/seed.ts";

// What server code's env reaches: the app's collections and buckets as its owner, declared APIs and AI calls through
// the app host's Outbound (a recording fake here), the bound on env calls per request, and an env kept from an
// earlier request. Then the log writer's own bounds.

const HANDLER = `
let kept = null;
export default {
  async fetch(request, env) {
    const path = new URL(request.url).pathname;
    const todos = env.db("todos");
    try {
      switch (path) {
        case "/api/db": {
          const added = await todos.add({ title: await request.text(), done: false });
          const read = await todos.get(added.id);
          const changed = await todos.update(added.id, { done: true });
          const page = await todos.list({ where: { done: true }, limit: 5 });
          return Response.json({ added, read, changed, count: page.documents.length });
        }
        case "/api/db-remove": { const added = await todos.add({ title: "gone" }); return Response.json(await todos.remove(added.id)); }
        case "/api/undeclared": return Response.json(await env.db("secrets").list());
        case "/api/files": {
          const photos = env.files("photos");
          const file = await photos.upload("hello file", { name: "note.txt", contentType: "text/plain" });
          const page = await photos.list();
          return Response.json({ file, url: photos.url(file.id), count: page.files.length, removed: await photos.remove(file.id) });
        }
        case "/api/api": {
          const answer = await env.api("weather", "/now?city=Paris", { method: "POST", headers: { "x-a": "1" }, body: "ping" });
          return Response.json({ status: answer.status, type: answer.headers.get("content-type"), body: await answer.json() });
        }
        case "/api/api-refused": await env.api("nope", "/"); return new Response("unreachable");
        case "/api/ai": return Response.json(await env.ai.chat({ messages: [{ role: "user", content: "hi" }], model: "tiny" }));
        case "/api/ai-bad": return Response.json(await env.ai.chat({ messages: [] }));
        case "/api/many": { for (let i = 0; i < 51; i++) await todos.list({ limit: 1 }); return new Response("all"); }
        case "/api/keep": kept = env; return new Response("kept");
        case "/api/stale": return Response.json(await kept.db("todos").list());
      }
    } catch (error) {
      return Response.json({ name: error.name, code: error.code, status: error.status, message: error.message }, { status: 418 });
    }
    return new Response("?", { status: 404 });
  },
};`;

class FakeOutbound implements Outbound {
  apiCalls: { name: string; path: string; init: ApiCallInit; caller: OutboundCaller }[] = [];
  aiCalls: { request: AiChatRequest; caller: OutboundCaller }[] = [];
  async callApi(_app: unknown, name: string, path: string, init: ApiCallInit, caller: OutboundCaller) {
    if (name !== "weather")
      throw new DataError("not_found", `This app declares no API "${name}" in service.json apis.`);
    this.apiCalls.push({ name, path, init, caller });
    return {
      status: 202,
      headers: { "content-type": "application/json" },
      body: new TextEncoder().encode('{"temp":21}'),
    };
  }
  async aiChat(_app: unknown, request: AiChatRequest, caller: OutboundCaller) {
    this.aiCalls.push({ request, caller });
    return { content: "hello!", model: request.model, usage: { inputTokens: 3, outputTokens: 2 } };
  }
}

describe("server code: env", () => {
  let t: TestHost;
  let app: SeededApp;
  let data: DataClient;
  const outbound = new FakeOutbound();

  beforeAll(async () => {
    t = await startTestHost({ outbound, serverCode: { workers: 1 } });
    data = new DataClient(t);
    const config = { server: "api.js", collections: { todos: {} }, buckets: { photos: {} } };
    app = await seedApp(t.ctx, {
      ...ownerSeed,
      address: "env-app",
      files: { "index.html": "x", "api.js": HANDLER },
      config,
    });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  const call = async (path: string, init: RequestInit = {}) => {
    const response = await t.get("env-app", path, init);
    return { status: response.status, body: (await response.json()) as any };
  };

  test("env.db adds, reads, changes and lists documents of an owner-only collection, as the owner", async () => {
    const { status, body } = await call("/api/db", {
      method: "POST",
      body: "Milk",
      headers: { cookie: data.cookie("env-app", member) },
    });
    expect(status).toBe(200);
    expect(body.added).toMatchObject({ title: "Milk", done: false, createdBy: owner.email });
    expect(body.read).toEqual(body.added);
    expect(body.changed).toMatchObject({ id: body.added.id, done: true });
    expect(body.count).toBe(1);
    const [row] = await t.ctx.db
      .select()
      .from(documents)
      .where(and(eq(documents.appId, app.id), eq(documents.id, body.added.id)));
    expect(row?.createdBy).toBe(owner.sub);
    expect((await call("/api/db-remove")).body).toMatchObject({ removed: true });
  });

  test("a collection not in service.json fails with the data routes' code and message", async () => {
    const { status, body } = await call("/api/undeclared");
    expect(status).toBe(418);
    expect(body).toMatchObject({ name: "HatchError", code: "not_found", status: 404 });
    expect(body.message).toContain('no collection "secrets"');
  });

  test("env.files uploads, lists and removes a bucket's files", async () => {
    const { body } = await call("/api/files");
    expect(body.file).toMatchObject({ name: "note.txt", size: 10, contentType: "text/plain", createdBy: owner.email });
    expect(body.url).toBe(`/_hatch/files/photos/${body.file.id}`);
    expect(body.count).toBe(1);
    expect(body.removed).toEqual({ id: body.file.id, removed: true });
  });

  test("env.api goes through Outbound as the server, with the viewer, and answers a Response", async () => {
    const { body } = await call("/api/api", { headers: { cookie: data.cookie("env-app", member) } });
    expect(body).toEqual({ status: 202, type: "application/json", body: { temp: 21 } });
    const [made] = outbound.apiCalls;
    expect(made).toMatchObject({
      name: "weather",
      path: "/now?city=Paris",
      init: { method: "POST", headers: { "x-a": "1" } },
      caller: { source: "server", viewer: { email: member.email } },
    });
    expect(new TextDecoder().decode(made!.init.body!)).toBe("ping");
    expect((await call("/api/api-refused")).body).toMatchObject({
      code: "not_found",
      message: 'This app declares no API "nope" in service.json apis.',
    });
  });

  test("env.ai.chat goes through Outbound; a bad request is refused before it", async () => {
    expect((await call("/api/ai")).body).toEqual({
      content: "hello!",
      model: "tiny",
      usage: { inputTokens: 3, outputTokens: 2 },
    });
    // An anonymous request's AI calls count against that viewer's address, not one allowance shared by the app.
    expect(outbound.aiCalls.at(-1)?.caller).toEqual({
      source: "server",
      viewer: null,
      rateKey: expect.stringMatching(/ a:127\.0\.0\.1$/),
    });
    const bad = (await call("/api/ai-bad")).body;
    expect(bad.code).toBe("invalid");
    expect(bad.message).toContain("env.ai.chat");
    expect(outbound.aiCalls).toHaveLength(1);
  });

  test("a request may make at most 50 env calls", async () => {
    const { body } = await call("/api/many");
    expect(body).toMatchObject({ code: "limit_exceeded" });
    expect(body.message).toContain("at most 50 env calls");
  });

  test("an env kept from an earlier request is refused", async () => {
    expect((await t.get("env-app", "/api/keep")).status).toBe(200);
    const { body } = await call("/api/stale");
    expect(body).toMatchObject({ code: "invalid" });
    expect(body.message).toContain("belongs to a request that has ended");
  });
});

describe("app log writer", () => {
  let t: TestHost;
  beforeAll(async () => {
    t = await startTestHost();
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  test("keeps the newest lines per app, truncates long lines, writes one batch per flush", async () => {
    const a = await seedApp(t.ctx, ownerSeed);
    const b = await seedApp(t.ctx, ownerSeed);
    const writer = new AppLogWriter(t.ctx.db, t.ctx.logger, { kept: 5, flushMs: 60_000 });
    writer.request(
      a.id,
      Array.from({ length: 8 }, (_, i) => ["info", `a${i}`] as ["info", string]),
    );
    writer.add(b.id, "warn", "x".repeat(5000));
    await writer.flush();
    writer.add(a.id, "error", "a-last");
    await writer.stop();
    const lines = await readAppLogs(t.ctx.db, a.id, undefined, 100);
    expect(lines.lines.map((l) => l.message)).toEqual(["a4", "a5", "a6", "a7", "a-last"]);
    expect(lines.truncated).toBe(false);
    const [long] = (await readAppLogs(t.ctx.db, b.id, undefined, 100)).lines;
    expect(long?.message.length).toBe(2000);
    expect(long?.message.endsWith("…")).toBe(true);
    expect((await readAppLogs(t.ctx.db, a.id, "error", 100)).lines.map((l) => l.message)).toEqual(["a-last"]);
    const limited = await readAppLogs(t.ctx.db, a.id, undefined, 2);
    expect(limited).toMatchObject({ truncated: true, lines: [{ message: "a7" }, { message: "a-last" }] });
    expect((await t.ctx.db.select().from(appLogs).where(eq(appLogs.appId, a.id))).length).toBe(5);
  });
});
