import { describe, expect, test } from "bun:test";
import { quickJs } from "../src/server-code/engine.ts";
import { Instance } from "../src/server-code/instance.ts";
import { ModuleLoadError, type RequestHooks, type SandboxLimits } from "../src/server-code/types.ts";

// Loading a module into a fresh sandbox instance, with the CPU deadline landing anywhere in it. A handle left alive
// on an error path used to make freeing the runtime abort QuickJS (JS_FreeRuntime's `list_empty(&rt->gc_obj_list)`),
// which poisons the worker's whole WebAssembly module: the first request to a new version then failed with "server
// code could not start". And the load was charged Hatch's own prelude, on wall time.

const hooks: RequestHooks = { log() {}, hostCall: async () => "null" };
const limits = (cpuMs: number): SandboxLimits => ({
  cpuMs,
  wallMs: 1000,
  memoryBytes: 32 * 1024 * 1024,
  stackBytes: 512 * 1024,
  hostCalls: 10,
  maxResponseBytes: 1024 * 1024,
});

/** "ok", the ModuleLoadError's limit or message, or whatever else was thrown (an abort is a RuntimeError). */
async function load(source: string, cpuMs: number): Promise<string> {
  const module = await quickJs();
  try {
    Instance.create(module, source, "s.js", limits(cpuMs), hooks).dispose();
    return "ok";
  } catch (error) {
    if (error instanceof ModuleLoadError) return error.limit ?? `error: ${error.message}`;
    return `crash: ${String(error)}`;
  }
}

const HANDLER = `export default { fetch: () => new Response("ok") };`;
const SOURCES = [
  // Work at the top level: the deadline lands in the module's evaluation.
  `let x = 0; for (let i = 0; i < 3e5; i++) x += i; ${HANDLER}`,
  // Top-level await: the deadline lands in the pending jobs.
  `await 0; const a = []; for (let i = 0; i < 1e5; i++) a.push({ i }); ${HANDLER}`,
  `async function f() { for (let i = 0; i < 1e5; i++) await i; } await f(); ${HANDLER}`,
  // An interrupt inside an async function rejects its promise instead of throwing.
  `const m = new Map(); for (let i = 0; i < 1e5; i++) m.set("k" + i, [i]); await Promise.resolve();
   class A { async f() { await 1; for (;;) {} } } await new A().f(); ${HANDLER}`,
];

describe("server code: loading a module under the CPU deadline", () => {
  test("an interrupt anywhere in the first load ends as a CPU stop and frees the runtime, never a crash", async () => {
    const seen = new Map<string, number>();
    for (let i = 0; i < 160; i++) {
      // Budgets from 0 to 19.5 ms: the interrupt lands at a different point of each load.
      const outcome = await load(SOURCES[i % SOURCES.length]!, (i % 40) / 2);
      seen.set(outcome, (seen.get(outcome) ?? 0) + 1);
    }
    expect([...seen.keys()].filter((outcome) => outcome !== "ok" && outcome !== "cpu")).toEqual([]);
    expect(seen.get("cpu")).toBeGreaterThan(0);
    // The engine still works afterwards.
    expect(await load(HANDLER, 200)).toBe("ok");
  }, 60_000);

  test("Hatch's prelude is not charged to the app: with no CPU budget left, a module without a loop still loads", async () => {
    for (let i = 0; i < 20; i++) expect(await load(HANDLER, 0)).toBe("ok");
  });

  test("a module that throws at once is reported as its throw, not as a CPU stop", async () => {
    for (let i = 0; i < 20; i++)
      expect(await load(`throw new Error("at once"); ${HANDLER}`, 0)).toBe("error: Error: at once");
    expect(await load(`await 0; throw new TypeError("later"); ${HANDLER}`, 0)).toBe("error: TypeError: later");
  });
});
