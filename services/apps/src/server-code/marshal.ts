import type { QuickJSContext, QuickJSDeferredPromise, QuickJSHandle, QuickJSWASMModule } from "quickjs-emscripten";
import { HostCallError, type HostCallResult, type Outcome, type SandboxReply } from "./types.ts";

// Values across the sandbox's edge: the app's reply out, host call answers and refusals in, errors described.

/** The prelude's dispatch result `[metaJson, body]` read out (body: text, bytes or undefined). */
export function readReply(context: QuickJSContext, value: QuickJSHandle): SandboxReply {
  const meta = JSON.parse(context.getProp(value, 0).consume((h) => context.getString(h))) as {
    status: number;
    headers: [string, string][];
  };
  const body = context.getProp(value, 1).consume((h): string | Uint8Array | null => {
    const type = context.typeof(h);
    if (type === "string") return context.getString(h);
    if (type !== "object") return null;
    const bytes = context.getArrayBuffer(h);
    try {
      return bytes.value.slice();
    } finally {
      bytes.dispose();
    }
  });
  return { status: meta.status, headers: meta.headers, body };
}

/** An error thrown by the app's code as name, message and stack (an out-of-memory error is a memory kill). */
export function describeError(context: QuickJSContext, error: QuickJSHandle): Outcome {
  let dumped: unknown;
  try {
    dumped = context.dump(error);
  } catch {
    return { kind: "memory" };
  }
  const shape = (typeof dumped === "object" && dumped !== null ? dumped : {}) as {
    name?: unknown;
    message?: unknown;
    stack?: unknown;
  };
  if (shape.name === "InternalError" && shape.message === "out of memory") return { kind: "memory" };
  const name = typeof shape.name === "string" ? shape.name : "Error";
  const message =
    typeof shape.message === "string"
      ? `${name}: ${shape.message}`
      : `Uncaught ${typeof dumped === "string" ? dumped : (JSON.stringify(dumped) ?? String(dumped))}`;
  return { kind: "error", message, stack: typeof shape.stack === "string" && shape.stack ? shape.stack : null };
}

/**
 * A host call's answer as a sandbox value, owned by the caller: JSON text, made exactly what JSON.stringify writes of
 * its value (the prelude may send it on as it is: prelude-json.ts), or [text, ArrayBuffer] (env.api's answer). null
 * when the text is not JSON. Text holding "then" anywhere gets a space in front: the prelude parses that at once
 * (a promise reads a value's `then`, which unparsed text cannot answer when it may be a key).
 */
export function toHandle(context: QuickJSContext, value: HostCallResult): QuickJSHandle | null {
  if (typeof value === "string") {
    const text = canonicalJson(value);
    if (text === null) return null;
    return newJsonString(context, text.includes('"then"') ? ` ${text}` : text);
  }
  const array = context.newArray();
  context.newString(value[0]).consume((h) => context.setProp(array, 0, h));
  context.newArrayBuffer(value[1] as unknown as ArrayBuffer).consume((h) => context.setProp(array, 1, h));
  return array;
}

/**
 * JSON text as JSON.stringify writes its value (no spaces, keys in the order JSON.parse makes them), or null when it
 * is not JSON. Postgres writes jsonb with spaces and its own key order; the sandbox's JSON.stringify writes the same
 * text as this (both follow the spec to the character: marshal.test.ts holds them equal on awkward values).
 */
export function canonicalJson(text: string): string | null {
  try {
    return JSON.stringify(JSON.parse(text));
  } catch {
    return null;
  }
}

/** Rejects a host call's promise with a HatchError (code, message, status); anything unexpected is `unavailable`. */
export function rejectWith(context: QuickJSContext, deferred: QuickJSDeferredPromise, error: unknown): void {
  const known =
    error instanceof HostCallError
      ? error
      : new HostCallError("unavailable", "Hatch could not do this right now. Try again in a moment.");
  const handle = context.newError({ name: "HatchError", message: known.message });
  context.newString(known.code).consume((h) => context.setProp(handle, "code", h));
  context.newNumber(known.status).consume((h) => context.setProp(handle, "status", h));
  deferred.reject(handle);
  handle.dispose();
}

/**
 * Bytes of the WebAssembly memory all runtimes share. It only grows when the allocator runs out of free space, so
 * growth while one runtime runs is a sign to measure that runtime (QuickJS's own limit cannot be trusted in this
 * build: without malloc_usable_size it counts 8 bytes per allocation, whatever its size).
 */
export function wasmHeapBytes(module: QuickJSWASMModule): number {
  return (module as unknown as { module: { HEAPU8: Uint8Array } }).module.HEAPU8.byteLength;
}

/** What newString reaches inside quickjs-emscripten (present in the version the lockfile holds; else the slow way). */
interface ContextInternals {
  ctx: { value: number };
  ffi: { QTS_NewString(ctx: number, pointer: number): number };
  memory: { heapValueHandle(pointer: number): QuickJSHandle };
  module: { _malloc(bytes: number): number; _free(pointer: number): void; HEAPU8: Uint8Array };
}

const utf8 = new TextEncoder();

/**
 * `context.newString` of text that JSON.stringify wrote (the JSON of a host answer, a request's meta), written into the
 * WebAssembly heap by the runtime's own UTF-8 encoder instead of emscripten's JavaScript loop: a list of 20 documents
 * (4 KB) costs about 15 µs less in the worker. Only for such text: it has no NUL character (QuickJS would read up to
 * it) and no lone surrogate (TextEncoder would write U+FFFD where the loop writes its three bytes), since
 * JSON.stringify escapes both.
 */
export function newJsonString(context: QuickJSContext, text: string): QuickJSHandle {
  const inside = context as unknown as Partial<ContextInternals>;
  const { ctx, ffi, memory, module } = inside;
  if (!ctx || !ffi || !memory || !module?._malloc || text.length < 64) return context.newString(text);
  // Exactly its UTF-8 bytes and the NUL after them (the WebAssembly heap never shrinks: no room to spare).
  const bytes = Buffer.byteLength(text, "utf8");
  const pointer = module._malloc(bytes + 1);
  try {
    const { written } = utf8.encodeInto(text, module.HEAPU8.subarray(pointer, pointer + bytes));
    module.HEAPU8[pointer + written] = 0;
    return memory.heapValueHandle(ffi.QTS_NewString(ctx.value, pointer));
  } finally {
    module._free(pointer);
  }
}
