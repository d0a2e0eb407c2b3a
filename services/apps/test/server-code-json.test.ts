import { describe, expect, test } from "bun:test";
import { quickJs } from "../src/server-code/engine.ts";
import { Instance } from "../src/server-code/instance.ts";
import { canonicalJson } from "../src/server-code/marshal.ts";
import type { Outcome, RequestHooks, SandboxLimits } from "../src/server-code/types.ts";

// env's answers reach the sandbox as JSON text and are parsed only when the code first looks at them
// (prelude-json.ts): a value passed on with Response.json is sent as that text. Nothing of this may be visible to the
// code: the value behaves as the parsed one, and the bytes sent are the ones JSON.stringify would write.

const limits: SandboxLimits = {
  cpuMs: 2000,
  wallMs: 5000,
  memoryBytes: 32 * 1024 * 1024,
  stackBytes: 512 * 1024,
  hostCalls: 10,
  maxResponseBytes: 1024 * 1024,
};

/** Postgres's way of writing JSON: spaces, its own key order, escapes where JSON.stringify writes none. */
const AWKWARD = `{"documents": [{"id": "a", "2": 2, "b": "\\u00e9\\u2028\\ud800 \\"q\\" \\/ \\u0000 \\ud83d\\ude00 😀 é ✓", "1": 1.0, "big": 12345678901234567890,
  "tiny": 1e-7, "nested": {"x": [1, 2.50, {"y": null}]}, "__proto__": {"z": true}}], "next": null}`;

const HANDLER = `
let kept = null;
export default {
  async fetch(request, env) {
    const path = new URL(request.url).pathname;
    const list = () => env.db("items").list({ limit: 20 });
    switch (path) {
      case "/pass": return Response.json(await list());
      case "/read-first": { const value = await list(); value.documents; return Response.json(value); }
      case "/stringify": return new Response(JSON.stringify(await list()));
      case "/shape": {
        const value = await list();
        const doc = value.documents[0];
        return Response.json({
          keys: Object.keys(value), isObject: value instanceof Object, proto: Object.getPrototypeOf(value) === Object.prototype,
          array: Array.isArray(value.documents), has: "next" in value, then: value.then, own: Object.getOwnPropertyDescriptor(value, "next"),
          docKeys: Object.keys(doc), protoKey: Object.prototype.hasOwnProperty.call(doc, "__proto__"), spread: Object.keys({ ...value }),
        });
      }
      case "/change": {
        const value = await list();
        value.extra = 1;
        delete value.next;
        value.documents.push("more");
        return Response.json(value);
      }
      case "/freeze": { const value = Object.freeze(await list()); return Response.json({ frozen: Object.isFrozen(value), set: Reflect.set(value, "x", 1) }); }
      case "/then": { const value = await env.db("items").get("t"); return Response.json({ then: value.then, value }); }
      case "/keep": kept = await list(); return new Response("kept");
      case "/kept": return Response.json(kept);
      case "/bad": try { await list(); return new Response("no"); } catch (error) { return new Response(error.name + " " + error.code); }
      default: return new Response("not found", { status: 404 });
    }
  },
};`;

async function instance(answers: Record<string, string>): Promise<(path: string) => Promise<string>> {
  const hooks: RequestHooks = {
    log() {},
    hostCall: async (op) => {
      const parsed = JSON.parse(op) as { id?: string };
      return answers[parsed.id ?? "list"] ?? "null";
    },
  };
  const sandbox = Instance.create(await quickJs(), HANDLER, "s.js", limits, hooks);
  return async (path) => {
    const meta = JSON.stringify({ method: "GET", url: `https://a.example${path}`, headers: [], viewer: null });
    const outcome: Outcome = await sandbox.run(meta, null, hooks);
    if (outcome.kind !== "ok") throw new Error(JSON.stringify(outcome));
    return String(outcome.reply.body);
  };
}

describe("server code: env's JSON answers", () => {
  test("a value passed on is sent as the text JSON.stringify writes, the same bytes as when it was read first", async () => {
    const get = await instance({ list: AWKWARD });
    const expected = JSON.stringify(JSON.parse(AWKWARD));
    expect(await get("/pass")).toBe(expected);
    expect(await get("/read-first")).toBe(expected);
    expect(await get("/stringify")).toBe(expected);
    expect(expected).toContain('{"1":1,"2":2,"id":"a"');
  });

  test("the value behaves as the parsed one: keys, prototype, descriptors, spread", async () => {
    const get = await instance({ list: AWKWARD });
    expect(JSON.parse(await get("/shape"))).toEqual({
      keys: ["documents", "next"],
      isObject: true,
      proto: true,
      array: true,
      has: true,
      own: { value: null, writable: true, enumerable: true, configurable: true },
      docKeys: ["1", "2", "id", "b", "big", "tiny", "nested", "__proto__"],
      protoKey: true,
      spread: ["documents", "next"],
    });
  });

  test("changes made to the value are what is sent; a frozen value stays frozen", async () => {
    const get = await instance({ list: AWKWARD });
    const changed = JSON.parse(AWKWARD) as Record<string, unknown> & { documents: unknown[] };
    changed.extra = 1;
    delete changed.next;
    changed.documents.push("more");
    expect(await get("/change")).toBe(JSON.stringify(changed));
    expect(JSON.parse(await get("/freeze"))).toEqual({ frozen: true, set: false });
  });

  test("a document with a then field is awaited as a value and keeps its field", async () => {
    const get = await instance({ t: '{"then": "later", "id": "t"}' });
    expect(JSON.parse(await get("/then"))).toEqual({ then: "later", value: { then: "later", id: "t" } });
  });

  test("a value kept in a module global is sent as it was in a later request", async () => {
    const get = await instance({ list: AWKWARD });
    expect(await get("/keep")).toBe("kept");
    expect(await get("/kept")).toBe(JSON.stringify(JSON.parse(AWKWARD)));
  });

  test("an answer that is not JSON is Hatch's failure (unavailable), never half a value", async () => {
    const get = await instance({ list: "{not json" });
    expect(await get("/bad")).toBe("HatchError unavailable");
  });

  test("canonicalJson writes what QuickJS's JSON.stringify writes, on awkward numbers, keys and strings", async () => {
    const module = await quickJs();
    const context = module.newContext();
    try {
      const samples = [
        AWKWARD,
        '{"a": 1e21, "b": 5e-324, "c": -0, "d": 0.30000000000000004, "e": 1.7976931348623157e308, "f": 9007199254740993}',
        '{"s": "\\u0000\\u001f\\u007f\\ud83d\\ude00\\udfff 😀", "4294967295": 1, "4294967294": 2, "01": 3, "-1": 4}',
        '[1, "two", {"three": [null, true, false, {}], "dup": 1, "dup": 2}]',
      ];
      for (const sample of samples) {
        const text = context.newString(sample);
        context.setProp(context.global, "text", text);
        text.dispose();
        const written = context.unwrapResult(context.evalCode("JSON.stringify(JSON.parse(text))"));
        expect(canonicalJson(sample)).toBe(context.getString(written));
        written.dispose();
      }
      expect(canonicalJson("{not json")).toBeNull();
    } finally {
      context.dispose();
    }
  });
});
