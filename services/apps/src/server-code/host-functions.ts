import { randomBytes } from "node:crypto";
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten";
import type { LogLevel } from "./types.ts";

// The synchronous host functions of the prelude's `H` object that need no request: UTF-8 and base64 done natively
// (a loop in the interpreter would cost the app's CPU budget many times over), and randomness from the host.
// The request-bound ones (log, call, timer, clearTimer) come from instance.ts, which knows the current request.

export interface RequestBoundFunctions {
  log(seq: number, level: LogLevel, message: string): void;
  call(seq: number, op: string, body: Uint8Array | null): QuickJSHandle;
  timer(seq: number, id: number, ms: number): QuickJSHandle;
  clearTimer(seq: number, id: number): void;
}

const LEVELS = new Set<string>(["debug", "info", "warn", "error"]);
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$/;

/** Builds `H` inside the context. The caller owns the returned handle. */
export function hostObject(context: QuickJSContext, bound: RequestBoundFunctions): QuickJSHandle {
  const H = context.newObject();
  const define = (name: string, fn: (...args: QuickJSHandle[]) => QuickJSHandle | { error: QuickJSHandle } | void) => {
    context.newFunction(name, fn).consume((handle) => context.setProp(H, name, handle));
  };
  const bytesOf = (handle: QuickJSHandle): Uint8Array => {
    const lifetime = context.getArrayBuffer(handle);
    try {
      return lifetime.value.slice();
    } finally {
      lifetime.dispose();
    }
  };
  // newArrayBuffer copies through `new Uint8Array(value)`, so a view (a pooled Buffer) is copied exactly.
  const arrayBuffer = (bytes: Uint8Array) => context.newArrayBuffer(bytes as unknown as ArrayBuffer);
  const domError = (name: string, message: string) => ({ error: context.newError({ name, message }) });

  define("encode", (text) => arrayBuffer(Buffer.from(context.getString(text), "utf8")));
  define("decode", (buffer, fatal) => {
    const bytes = bytesOf(buffer);
    try {
      return context.newString(new TextDecoder("utf-8", { fatal: context.dump(fatal) === true }).decode(bytes));
    } catch {
      return { error: context.newError({ name: "TypeError", message: "The bytes are not valid UTF-8" }) };
    }
  });
  define("random", (size) => arrayBuffer(randomBytes(Math.max(0, Math.min(65536, context.getNumber(size) | 0)))));
  define("btoa", (text) => {
    const value = context.getString(text);
    // Latin-1 is exactly what btoa takes.
    if (!/^[\u0000-\u00ff]*$/.test(value))
      return domError(
        "InvalidCharacterError",
        "btoa takes Latin-1 text only; encode other text first (e.g. with TextEncoder)",
      );
    return context.newString(Buffer.from(value, "latin1").toString("base64"));
  });
  define("atob", (text) => {
    const value = context.getString(text).replace(/[\t\n\f\r ]/g, "");
    if (
      !BASE64.test(value) &&
      !(value.length % 4 !== 1 && BASE64.test(value + "=".repeat((4 - (value.length % 4)) % 4)))
    ) {
      return domError("InvalidCharacterError", "atob was given text that is not base64");
    }
    return context.newString(Buffer.from(value, "base64").toString("latin1"));
  });
  define("log", (seq, level, message) => {
    const name = context.getString(level);
    bound.log(context.getNumber(seq), (LEVELS.has(name) ? name : "info") as LogLevel, context.getString(message));
  });
  define("call", (seq, op, body) =>
    bound.call(context.getNumber(seq), context.getString(op), context.typeof(body) === "object" ? bytesOf(body) : null),
  );
  define("timer", (seq, id, ms) => bound.timer(context.getNumber(seq), context.getNumber(id), context.getNumber(ms)));
  define("clearTimer", (seq, id) => bound.clearTimer(context.getNumber(seq), context.getNumber(id)));
  return H;
}
