// The web classes server code expects (Headers, Request, Response, URL, URLSearchParams), written in plain JavaScript
// that runs inside the sandbox before the app's module. QuickJS has none of them. They follow the WHATWG shapes closely
// enough for handlers written for Workers, Deno or Val Town; bodies are whole (no streams): a request body is at most
// SERVER_LIMITS.maxRequestBytes anyway. `H` is the host object of prelude-env.ts (UTF-8 through the host: native and
// far cheaper than a loop in the interpreter).

export const PRELUDE_WEB = String.raw`
const NAME = /^[!#$%&'*+.^_\x60|~0-9A-Za-z-]+$/;
function headerName(name) {
  name = String(name);
  if (!NAME.test(name)) throw new TypeError("Invalid header name: " + JSON.stringify(name.slice(0, 64)));
  return name.toLowerCase();
}
function headerValue(value) {
  value = String(value).replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, "");
  if (/[\0\r\n]/.test(value)) throw new TypeError("Invalid header value (it holds a line break or NUL)");
  return value;
}
class Headers {
  #map = new Map();
  constructor(init) {
    if (init === undefined || init === null) return;
    if (init instanceof Headers) { init.#map.forEach((values, key) => this.#map.set(key, values.slice())); return; }
    if (Array.isArray(init)) { for (let i = 0; i < init.length; i++) this.#pair(init[i]); return; }
    if (typeof init[Symbol.iterator] === "function") { for (const pair of init) this.#pair(pair); return; }
    const keys = Object.keys(init);
    for (let i = 0; i < keys.length; i++) this.append(keys[i], init[keys[i]]);
  }
  #pair(pair) {
    if (!pair || pair.length !== 2) throw new TypeError("Headers: each pair must be [name, value]");
    this.append(pair[0], pair[1]);
  }
  /** Headers as the host sent them: names already lower-case and valid. */
  static _trusted(pairs) {
    const headers = new Headers();
    const map = headers.#map;
    for (let i = 0; i < pairs.length; i++) {
      const had = map.get(pairs[i][0]);
      if (had === undefined) map.set(pairs[i][0], [pairs[i][1]]); else had.push(pairs[i][1]);
    }
    return headers;
  }
  /** [name, value] pairs for the host, unsorted, one per Set-Cookie. */
  _pairs() {
    const out = [];
    this.#map.forEach((values, key) => {
      if (key === "set-cookie") for (let i = 0; i < values.length; i++) out.push([key, values[i]]);
      else out.push([key, values.join(", ")]);
    });
    return out;
  }
  append(name, value) {
    const key = headerName(name); value = headerValue(value);
    const had = this.#map.get(key);
    if (had === undefined) this.#map.set(key, [value]); else had.push(value);
  }
  set(name, value) { this.#map.set(headerName(name), [headerValue(value)]); }
  get(name) {
    const key = headerName(name);
    const values = this.#map.get(key);
    if (values === undefined) return null;
    return key === "set-cookie" ? values[0] : values.join(", ");
  }
  getSetCookie() { return (this.#map.get("set-cookie") || []).slice(); }
  has(name) { return this.#map.has(headerName(name)); }
  delete(name) { this.#map.delete(headerName(name)); }
  forEach(callback, thisArg) { for (const [k, v] of this) callback.call(thisArg, v, k, this); }
  *entries() {
    for (const key of [...this.#map.keys()].sort()) {
      const values = this.#map.get(key);
      if (key === "set-cookie") for (const v of values) yield [key, v];
      else yield [key, values.join(", ")];
    }
  }
  *keys() { for (const [k] of this.entries()) yield k; }
  *values() { for (const [, v] of this.entries()) yield v; }
  [Symbol.iterator]() { return this.entries(); }
}

/** The bytes a view shows, as an ArrayBuffer of their own (the view itself when it covers its whole buffer). */
function exactBuffer(view) {
  return view.byteOffset === 0 && view.byteLength === view.buffer.byteLength ? view.buffer : view.buffer.slice(view.byteOffset, view.byteOffset + view.byteLength);
}
/** A body kept as given: a string, bytes (Uint8Array) or null; converted only when read. */
function toBody(body) {
  if (body == null) return { value: null, type: null };
  if (typeof body === "string") return { value: body, type: "text/plain;charset=UTF-8" };
  if (body instanceof URLSearchParams) return { value: body.toString(), type: "application/x-www-form-urlencoded;charset=UTF-8" };
  if (body instanceof ArrayBuffer) return { value: new Uint8Array(body.slice(0)), type: null };
  if (ArrayBuffer.isView(body)) return { value: new Uint8Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength)), type: null };
  return { value: String(body), type: "text/plain;charset=UTF-8" };
}
class Body {
  #body = null;
  #used = false;
  _setBody(value) { this.#body = value; }
  _rawBody() { return this.#body; }
  get bodyUsed() { return this.#used; }
  get body() { return this.#body === null ? null : {}; }
  #take() {
    if (this.#used) throw new TypeError("Body has already been read");
    this.#used = true;
    return this.#body;
  }
  async text() { const b = this.#take(); return b === null ? "" : typeof b === "string" ? b : H.decode(exactBuffer(b), false); }
  async json() { return JSON.parse(await this.text()); }
  async arrayBuffer() { const b = this.#take(); return b === null ? new ArrayBuffer(0) : typeof b === "string" ? H.encode(b) : b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength); }
  async bytes() { return new Uint8Array(await this.arrayBuffer()); }
  async formData() { throw new TypeError("formData() is not available in Hatch server code: read text() and parse it with new URLSearchParams(text)"); }
  async blob() { throw new TypeError("blob() is not available in Hatch server code: use arrayBuffer() or bytes()"); }
}

/** Passed as the first argument, it builds the incoming request from the host's data (no URL parsing, lazy headers). */
const INCOMING = Symbol("incoming");
class Request extends Body {
  #url; #method; #headers; #raw = null;
  constructor(input, init = {}) {
    super();
    if (input === INCOMING) { this.#url = init.url; this.#method = init.method; this.#raw = init.headers; this._setBody(init.body); return; }
    const from = input instanceof Request ? input : null;
    this.#url = from ? from.url : new URL(String(input)).href;
    this.#method = String(init.method || (from ? from.method : "GET")).toUpperCase();
    this.#headers = new Headers(init.headers || (from ? from.headers : undefined));
    const given = init.body !== undefined ? toBody(init.body) : { value: from ? from._rawBody() : null, type: null };
    if (given.value !== null && (this.#method === "GET" || this.#method === "HEAD")) throw new TypeError("A GET or HEAD request cannot have a body");
    if (given.type && !this.#headers.has("content-type")) this.#headers.set("content-type", given.type);
    this._setBody(given.value);
  }
  get url() { return this.#url; }
  get method() { return this.#method; }
  get headers() {
    if (this.#headers === undefined) { this.#headers = Headers._trusted(this.#raw); this.#raw = null; }
    return this.#headers;
  }
  get signal() { return { aborted: false, addEventListener() {}, removeEventListener() {} }; }
  clone() { return new Request(this); }
}

class Response extends Body {
  #status; #statusText; #headers; #type = null;
  constructor(body = null, init = {}) {
    super();
    const status = init.status === undefined ? 200 : Number(init.status);
    if (!Number.isInteger(status) || status < 200 || status > 599) throw new RangeError("Response status must be a whole number from 200 to 599, not " + init.status);
    this.#status = status;
    this.#statusText = init.statusText === undefined ? "" : String(init.statusText);
    const given = toBody(body);
    // Headers are built when read: most handlers never read their own response's headers.
    if (init.headers !== undefined) {
      this.#headers = new Headers(init.headers);
      if (given.type && !this.#headers.has("content-type")) this.#headers.set("content-type", given.type);
    } else this.#type = given.type;
    this._setBody(given.value);
  }
  /** [name, value] pairs for the host. */
  _pairs() { return this.#headers !== undefined ? this.#headers._pairs() : this.#type ? [["content-type", this.#type]] : []; }
  static json(data, init = {}) {
    const unread = unparsedJson(data);
    const text = unread !== undefined ? unread : JSON.stringify(data);
    if (text === undefined) throw new TypeError("Response.json: this value cannot be written as JSON");
    if (init.headers === undefined) {
      // No headers given: the content type alone, built when read (as a text body's is).
      const response = new Response(text, init);
      response.#type = "application/json";
      return response;
    }
    const headers = new Headers(init.headers);
    if (!headers.has("content-type")) headers.set("content-type", "application/json");
    return new Response(text, { ...init, headers });
  }
  static redirect(url, status = 302) {
    if (![301, 302, 303, 307, 308].includes(status)) throw new RangeError("Response.redirect status must be 301, 302, 303, 307 or 308");
    return new Response(null, { status, headers: { location: String(url) } });
  }
  static error() { throw new TypeError("Response.error() is not available in Hatch server code: answer with a status, e.g. new Response('...', { status: 500 })"); }
  get status() { return this.#status; }
  get statusText() { return this.#statusText; }
  get ok() { return this.#status >= 200 && this.#status < 300; }
  get headers() {
    if (this.#headers === undefined) { this.#headers = new Headers(this.#type ? [["content-type", this.#type]] : undefined); this.#type = null; }
    return this.#headers;
  }
  get redirected() { return false; }
  get type() { return "default"; }
  get url() { return ""; }
  clone() { return new Response(this._rawBody(), { status: this.#status, statusText: this.#statusText, headers: this.headers }); }
}

const FORM_PLAIN = /^[A-Za-z0-9*._-]*$/;
function formEncode(text) {
  if (FORM_PLAIN.test(text)) return text;
  return encodeURIComponent(text).replace(/%20/g, "+").replace(/[!'()~]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
}
function formDecode(text) {
  try { return decodeURIComponent(text.replace(/\+/g, " ")); } catch { return text.replace(/\+/g, " "); }
}
class URLSearchParams {
  #list = [];
  #onChange = null;
  constructor(init) {
    if (init == null) return;
    if (init instanceof URLSearchParams) { this.#list = init.#list.map((p) => p.slice()); return; }
    if (typeof init === "string") { this._parse(init); return; }
    if (Array.isArray(init) || typeof init[Symbol.iterator] === "function") { for (const [k, v] of init) this.#list.push([String(k), String(v)]); return; }
    for (const key of Object.keys(init)) this.#list.push([key, String(init[key])]);
  }
  _parse(text) {
    this.#list = [];
    for (const part of String(text).replace(/^\?/, "").split("&")) {
      if (!part) continue;
      const eq = part.indexOf("=");
      this.#list.push(eq < 0 ? [formDecode(part), ""] : [formDecode(part.slice(0, eq)), formDecode(part.slice(eq + 1))]);
    }
  }
  _watch(callback) { this.#onChange = callback; }
  #changed() { if (this.#onChange) this.#onChange(this.toString()); }
  get size() { return this.#list.length; }
  append(name, value) { this.#list.push([String(name), String(value)]); this.#changed(); }
  delete(name, value) { name = String(name); this.#list = this.#list.filter(([k, v]) => k !== name || (value !== undefined && v !== String(value))); this.#changed(); }
  get(name) { const found = this.#list.find(([k]) => k === String(name)); return found ? found[1] : null; }
  getAll(name) { return this.#list.filter(([k]) => k === String(name)).map(([, v]) => v); }
  has(name, value) { return this.#list.some(([k, v]) => k === String(name) && (value === undefined || v === String(value))); }
  set(name, value) {
    name = String(name); value = String(value);
    const at = this.#list.findIndex(([k]) => k === name);
    if (at < 0) this.#list.push([name, value]);
    else { this.#list[at][1] = value; this.#list = this.#list.filter(([k], i) => k !== name || i === at); }
    this.#changed();
  }
  sort() { this.#list.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)); this.#changed(); }
  forEach(callback, thisArg) { for (const [k, v] of this.#list) callback.call(thisArg, v, k, this); }
  *entries() { for (const pair of this.#list) yield [pair[0], pair[1]]; }
  *keys() { for (const [k] of this.#list) yield k; }
  *values() { for (const [, v] of this.#list) yield v; }
  [Symbol.iterator]() { return this.entries(); }
  toString() { return this.#list.map(([k, v]) => formEncode(k) + "=" + formEncode(v)).join("&"); }
}

const URL_PARTS = /^([a-zA-Z][a-zA-Z0-9+.-]*:)(?:\/\/(?:([^:@\/?#]*)(?::([^@\/?#]*))?@)?(\[[0-9a-fA-F:.]+\]|[^:\/?#]*)(?::(\d*))?)?([^?#]*)(\?[^#]*)?(#.*)?$/;
const DEFAULT_PORTS = { "http:": "80", "https:": "443", "ws:": "80", "wss:": "443" };
function normalizePath(path) {
  const out = [];
  const parts = path.split("/");
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i];
    if (part === "..") { if (out.length > 1) out.pop(); if (i === parts.length - 1) out.push(""); }
    else if (part === ".") { if (i === parts.length - 1) out.push(""); }
    else out.push(part);
  }
  const joined = out.join("/");
  return joined.startsWith("/") ? joined : "/" + joined;
}
function encodePart(text, extra) {
  return text.replace(/[^\x21-\x7e]|[<>"\x60{}]/g, (c) => encodeURIComponent(c)).replace(extra || /(?!)/g, (c) => encodeURIComponent(c));
}
/** Absolute URLs parsed lately, text → parts: a handler parses request.url each time, often the same text. */
const PARSED_URLS = new Map();
const PARSED_URLS_KEPT = 32;
class URL {
  #protocol = ""; #username = ""; #password = ""; #hostname = ""; #port = ""; #pathname = "/"; #search = ""; #hash = "";
  #params = null;
  constructor(input, base) {
    input = String(input);
    const known = base === undefined ? PARSED_URLS.get(input) : undefined;
    if (known !== undefined) {
      this.#protocol = known[0]; this.#username = known[1]; this.#password = known[2]; this.#hostname = known[3];
      this.#port = known[4]; this.#pathname = known[5]; this.#search = known[6]; this.#hash = known[7];
      return;
    }
    this.#parse(input, base);
    if (base !== undefined) return;
    if (PARSED_URLS.size >= PARSED_URLS_KEPT) PARSED_URLS.delete(PARSED_URLS.keys().next().value);
    PARSED_URLS.set(input, [this.#protocol, this.#username, this.#password, this.#hostname, this.#port, this.#pathname, this.#search, this.#hash]);
  }
  #parse(input, base) {
    input = input.replace(/^[\0-\x20]+|[\0-\x20]+$/g, "").replace(/[\t\n\r]/g, "");
    let match = URL_PARTS.exec(input);
    if (!match || (match[4] === undefined && /^(https?|wss?):$/i.test(match[1]))) {
      if (base === undefined) throw new TypeError("Invalid URL: " + JSON.stringify(input.slice(0, 200)));
      const root = base instanceof URL ? base : new URL(String(base));
      let path = input;
      const hashAt = path.indexOf("#");
      const hash = hashAt < 0 ? "" : path.slice(hashAt);
      if (hashAt >= 0) path = path.slice(0, hashAt);
      const queryAt = path.indexOf("?");
      const search = queryAt < 0 ? null : path.slice(queryAt);
      if (queryAt >= 0) path = path.slice(0, queryAt);
      let href;
      if (input.startsWith("//")) href = root.protocol + input;
      else if (path.startsWith("/")) href = root.origin + path + (search ?? "") + hash;
      else if (path === "") href = root.origin + root.pathname + (search ?? root.search) + hash;
      else href = root.origin + root.pathname.replace(/[^\/]*$/, "") + path + (search ?? "") + hash;
      match = URL_PARTS.exec(href);
      if (!match) throw new TypeError("Invalid URL: " + JSON.stringify(input.slice(0, 200)));
    }
    this.#protocol = match[1].toLowerCase();
    this.#username = match[2] || "";
    this.#password = match[3] || "";
    this.#hostname = (match[4] || "").toLowerCase();
    if (/[\s<>^|%\\]/.test(this.#hostname)) throw new TypeError("Invalid URL host: " + JSON.stringify(this.#hostname.slice(0, 200)));
    const port = match[5] || "";
    if (port && Number(port) > 65535) throw new TypeError("Invalid URL port: " + port);
    this.#port = port && DEFAULT_PORTS[this.#protocol] === String(Number(port)) ? "" : port ? String(Number(port)) : "";
    const special = match[4] !== undefined;
    const path = match[6] || "";
    this.#pathname = special ? encodePart(normalizePath(path.replace(/\\/g, "/"))) : encodePart(path);
    // An empty query or fragment ("?" or "#" alone) is kept for href; search and hash read it as "".
    this.#search = match[7] ? (match[7] === "?" ? "?" : encodePart(match[7], /'/g)) : "";
    this.#hash = match[8] ? (match[8] === "#" ? "#" : encodePart(match[8])) : "";
  }
  static canParse(input, base) { try { new URL(input, base); return true; } catch { return false; } }
  get protocol() { return this.#protocol; }
  get username() { return this.#username; }
  get password() { return this.#password; }
  get hostname() { return this.#hostname; }
  set hostname(value) { this.#hostname = String(value).toLowerCase(); }
  get port() { return this.#port; }
  set port(value) { value = String(value); this.#port = value === DEFAULT_PORTS[this.#protocol] ? "" : value; }
  get host() { return this.#hostname + (this.#port ? ":" + this.#port : ""); }
  get origin() { return this.#hostname ? this.#protocol + "//" + this.host : "null"; }
  get pathname() { return this.#pathname; }
  set pathname(value) { this.#pathname = encodePart(normalizePath(String(value))); }
  get search() { return this.#search === "?" ? "" : this.#search; }
  set search(value) { value = String(value); this.#search = value === "" ? "" : value === "?" ? "?" : encodePart(value.startsWith("?") ? value : "?" + value, /'/g); if (this.#params) this.#params._parse(this.#search); }
  get hash() { return this.#hash === "#" ? "" : this.#hash; }
  set hash(value) { value = String(value); this.#hash = value === "" ? "" : value === "#" ? "#" : value.startsWith("#") ? value : "#" + value; }
  get searchParams() {
    if (!this.#params) {
      this.#params = new URLSearchParams(this.#search);
      this.#params._watch((text) => { this.#search = text ? "?" + text : ""; });
    }
    return this.#params;
  }
  get href() {
    const auth = this.#username || this.#password ? this.#username + (this.#password ? ":" + this.#password : "") + "@" : "";
    return this.#protocol + (this.#hostname || auth ? "//" + auth + this.host : "") + this.#pathname + this.#search + this.#hash;
  }
  toString() { return this.href; }
  toJSON() { return this.href; }
}
`;
