import { PRELUDE_JSON } from "./prelude-json.ts";
import { PRELUDE_WEB } from "./prelude-web.ts";

// The rest of the sandbox's prelude: console, timers, crypto, text codecs, base64, the refusing `fetch`, the `env`
// of one request, and the entry points the host calls (install the app's module, dispatch a request).
//
// The prelude is one function expression. The host calls it with `H`, an object of host functions (see
// instance.ts), and keeps the entry object it returns; nothing named __hatch is ever on globalThis, so the app's code
// reaches the host only through what the prelude hands it. Every host call carries the request's sequence number: an
// env object kept in a module global from an earlier request is refused (the host checks the number), so one
// request's viewer is never used by another's.

const PRELUDE_ENV = String.raw`
function show(value) {
  if (typeof value === "string") return value;
  if (value instanceof Error) return value.name + ": " + value.message + (value.stack ? "\n" + String(value.stack).replace(/\n$/, "") : "");
  if (value === undefined || typeof value === "function" || typeof value === "symbol" || typeof value === "bigint") return String(value);
  try { const text = JSON.stringify(value); return text === undefined ? String(value) : text; } catch { return String(value); }
}
let current = 0;
function logAt(level) { return (...args) => H.log(current, level, args.map(show).join(" ")); }
const console = { debug: logAt("debug"), info: logAt("info"), log: logAt("info"), warn: logAt("warn"), error: logAt("error"), trace: logAt("debug"), dir: logAt("info"), table: logAt("info") };
function reportError(error) { H.log(current, "error", "Uncaught " + show(error)); }

let nextTimer = 0;
const timers = new Map();
function arm(id, ms) {
  H.timer(current, id, Math.max(0, Number(ms) || 0)).then(() => {
    const timer = timers.get(id);
    if (!timer) return;
    if (timer.repeat) arm(id, ms); else timers.delete(id);
    try { timer.callback(...timer.args); } catch (error) { reportError(error); }
  });
}
function schedule(callback, ms, args, repeat) {
  if (typeof callback !== "function") throw new TypeError("setTimeout and setInterval take a function (a string of code is not run)");
  const id = ++nextTimer;
  timers.set(id, { callback, args, repeat });
  arm(id, ms);
  return id;
}
function clear(id) { if (timers.delete(id)) H.clearTimer(current, id); }

class TextEncoder {
  get encoding() { return "utf-8"; }
  encode(text = "") { return new Uint8Array(H.encode(String(text))); }
  encodeInto(text, into) { const bytes = this.encode(text); const n = Math.min(bytes.length, into.length); into.set(bytes.subarray(0, n)); return { read: n === bytes.length ? String(text).length : undefined, written: n }; }
}
class TextDecoder {
  #fatal;
  constructor(label = "utf-8", options = {}) {
    if (!/^(utf-?8|unicode-1-1-utf-8)$/i.test(String(label).trim())) throw new RangeError("TextDecoder in Hatch server code reads UTF-8 only, not " + JSON.stringify(String(label)));
    this.#fatal = Boolean(options.fatal);
  }
  get encoding() { return "utf-8"; }
  get fatal() { return this.#fatal; }
  decode(input) {
    if (input === undefined) return "";
    const view = input instanceof ArrayBuffer ? new Uint8Array(input) : ArrayBuffer.isView(input) ? new Uint8Array(input.buffer, input.byteOffset, input.byteLength) : null;
    if (!view) throw new TypeError("TextDecoder.decode takes an ArrayBuffer or a typed array");
    return H.decode(view.buffer.slice(view.byteOffset, view.byteOffset + view.byteLength), this.#fatal);
  }
}

const crypto = {
  randomUUID() {
    const b = new Uint8Array(H.random(16));
    b[6] = (b[6] & 0x0f) | 0x40; b[8] = (b[8] & 0x3f) | 0x80;
    const hex = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    return hex.slice(0, 8) + "-" + hex.slice(8, 12) + "-" + hex.slice(12, 16) + "-" + hex.slice(16, 20) + "-" + hex.slice(20);
  },
  getRandomValues(array) {
    if (!(array instanceof Int8Array || array instanceof Uint8Array || array instanceof Uint8ClampedArray || array instanceof Int16Array || array instanceof Uint16Array || array instanceof Int32Array || array instanceof Uint32Array || array instanceof BigInt64Array || array instanceof BigUint64Array)) {
      throw new TypeError("getRandomValues takes an integer typed array, e.g. new Uint8Array(16)");
    }
    if (array.byteLength > 65536) throw new RangeError("getRandomValues fills at most 65536 bytes at once");
    new Uint8Array(array.buffer, array.byteOffset, array.byteLength).set(new Uint8Array(H.random(array.byteLength)));
    return array;
  },
};

function fetch() {
  return Promise.reject(new TypeError("fetch is not available in Hatch server code: declare the API in service.json \"apis\" (url, secret) and call env.api(name, path, init); see service_docs, topic server_code."));
}

function bytesOf(body) {
  if (body == null) return undefined;
  if (typeof body === "string") return H.encode(body);
  if (body instanceof ArrayBuffer) return body.slice(0);
  if (ArrayBuffer.isView(body)) return body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength);
  if (body instanceof URLSearchParams) return H.encode(body.toString());
  throw new TypeError("A body is a string, an ArrayBuffer or a typed array (JSON: JSON.stringify(value))");
}
/** The query string URLSearchParams would write of these values (each key once), without building one. */
function query(values) {
  let out = "";
  const keys = Object.keys(values);
  for (let i = 0; i < keys.length; i++) {
    const value = values[keys[i]];
    if (value === undefined || value === null) continue;
    out += (out ? "&" : "") + formEncode(keys[i]) + "=" + formEncode(typeof value === "object" ? JSON.stringify(value) : String(value));
  }
  return out;
}
function makeEnv(seq, viewer) {
  const call = (op, body) => H.call(seq, JSON.stringify(op), body);
  const data = async (op, body) => lazyJson(await call(op, body));
  const db = (name) => {
    name = String(name);
    return {
      add: (doc) => data({ op: "db", method: "POST", name, body: doc }),
      get: (id) => data({ op: "db", method: "GET", name, id: String(id) }),
      list: (options = {}) => data({ op: "db", method: "GET", name, query: query({ where: options.where, orderBy: options.orderBy, limit: options.limit, after: options.after }) }),
      update: (id, patch) => data({ op: "db", method: "PATCH", name, id: String(id), body: patch }),
      remove: (id) => data({ op: "db", method: "DELETE", name, id: String(id) }),
      subscribe() { throw new TypeError("subscribe() is for pages: server code answers one request at a time. Use list() here."); },
    };
  };
  const files = (name) => {
    name = String(name);
    return {
      upload: (content, options = {}) => data({ op: "files", method: "POST", name, query: query({ name: options.name }), contentType: options.contentType || options.type || "application/octet-stream" }, bytesOf(content)),
      list: (options = {}) => data({ op: "files", method: "GET", name, query: query({ limit: options.limit, after: options.after }) }),
      url: (id) => "/_hatch/files/" + encodeURIComponent(name) + "/" + encodeURIComponent(String(id)),
      remove: (id) => data({ op: "files", method: "DELETE", name, id: String(id) }),
    };
  };
  async function api(name, path = "/", init = {}) {
    const headers = [...new Headers(init.headers)];
    const [meta, bytes] = await call({ op: "api", name: String(name), path: String(path), method: String(init.method || "GET").toUpperCase(), headers }, bytesOf(init.body));
    const answer = JSON.parse(meta);
    return new Response(bytes, { status: answer.status, headers: answer.headers });
  }
  const ai = { chat: (request) => data({ op: "ai", request }) };
  return { viewer: viewer ? Object.freeze({ email: viewer.email, name: viewer.name }) : null, db, files, api, ai };
}

const globals = {
  Headers, Request, Response, URL, URLSearchParams, TextEncoder, TextDecoder, console, crypto, fetch, reportError,
  setTimeout: (callback, ms, ...args) => schedule(callback, ms, args, false),
  setInterval: (callback, ms, ...args) => schedule(callback, ms, args, true),
  clearTimeout: clear,
  clearInterval: clear,
  queueMicrotask: (callback) => { Promise.resolve().then(callback).catch(reportError); },
  atob: (text) => H.atob(String(text)),
  btoa: (text) => H.btoa(String(text)),
};
for (const name of Object.keys(globals)) Object.defineProperty(globalThis, name, { value: globals[name], writable: true, configurable: true, enumerable: false });

let handle = null;
const context = Object.freeze({ waitUntil() {}, passThroughOnException() {} });
return {
  install(exports) {
    const main = exports.default;
    if (main && typeof main === "object" && typeof main.fetch === "function") handle = (request, env) => main.fetch(request, env, context);
    else if (typeof main === "function") handle = (request, env) => main(request, env, context);
    else if (typeof exports.fetch === "function") handle = (request, env) => exports.fetch(request, env, context);
    else throw new TypeError("The server module must export its handler: export default { async fetch(request, env) { return new Response(\"hello\"); } }");
  },
  async dispatch(seq, meta, body) {
    current = seq;
    timers.clear();
    const given = JSON.parse(meta);
    const request = new Request(INCOMING, { url: given.url, method: given.method, headers: given.headers, body: body === null ? null : new Uint8Array(body) });
    const response = await handle(request, makeEnv(seq, given.viewer));
    if (!(response instanceof Response)) {
      throw new TypeError("fetch(request, env) must return a Response, e.g. new Response(\"hello\") or Response.json({ ok: true }); it returned " + (response === null ? "null" : typeof response));
    }
    const raw = response._rawBody();
    const out = raw === null ? undefined : typeof raw === "string" ? raw : raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength);
    return [JSON.stringify({ status: response.status, headers: response._pairs() }), out];
  },
};
`;

/** The prelude as one function expression of the host object `H`; it defines the globals and returns the entry points. */
export const PRELUDE = `(function (H) {
"use strict";
${PRELUDE_JSON}
${PRELUDE_WEB}
${PRELUDE_ENV}
})`;
