import { BodyTooLargeError } from "./errors.ts";

/** Reads a stream as text, or null past `limit` bytes (stops reading there rather than buffering the excess). */
export async function readCapped(stream: ReadableStream<Uint8Array> | null, limit: number): Promise<string | null> {
  if (!stream) return "";
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}

/** The request body as text; throws BodyTooLargeError past config.maxBodyBytes (routes answer 413). */
export async function readBodyText(request: Request, limit: number): Promise<string> {
  const declared = request.headers.get("content-length");
  if (Number(declared ?? "0") > limit) throw new BodyTooLargeError();
  // With a declared length the server already holds the body to that size: read it natively (the hot path).
  // Without one (chunked), read chunk by chunk and stop at the limit.
  if (declared !== null && request.headers.get("transfer-encoding") === null) return request.text();
  const text = await readCapped(request.body, limit);
  if (text === null) throw new BodyTooLargeError();
  return text;
}

/** Flat string parameters of a form or JSON body; `repeated` lists names sent more than once (RFC 6749 §3.1). */
export interface Params {
  get(name: string): string | undefined;
  repeated: string[];
}

function paramsOf(entries: Array<[string, string]>): Params {
  const map = new Map<string, string>();
  const repeated = new Set<string>();
  for (const [key, value] of entries) {
    if (map.has(key)) repeated.add(key);
    else map.set(key, value);
  }
  return { get: (name) => map.get(name), repeated: [...repeated] };
}

export function queryParams(url: URL): Params {
  return paramsOf([...url.searchParams.entries()]);
}

/** Form-encoded (the OAuth default) or JSON bodies; JSON non-string values are ignored. */
export async function readParams(request: Request, limit: number): Promise<Params> {
  const text = await readBodyText(request, limit);
  const type = request.headers.get("content-type") ?? "";
  if (type.includes("application/json")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return paramsOf([]);
    }
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) return paramsOf([]);
    return paramsOf(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === "string"));
  }
  return paramsOf([...new URLSearchParams(text).entries()]);
}

export function jsonResponse(body: unknown, status = 200, headers: HeadersInit = {}): Response {
  const h = new Headers(headers);
  h.set("Content-Type", "application/json");
  return new Response(JSON.stringify(body), { status, headers: h });
}

/** RFC 6749 §5.2 error body; token responses must never be cached. */
export function oauthError(error: string, description: string, status = 400): Response {
  return jsonResponse({ error, error_description: description }, status, {
    "Cache-Control": "no-store",
    Pragma: "no-cache",
  });
}

/** 303 so a POSTed form is followed by a GET. */
export function redirect(location: string, headers: HeadersInit = {}): Response {
  const h = new Headers(headers);
  h.set("Location", location);
  h.set("Cache-Control", "no-store");
  return new Response(null, { status: 303, headers: h });
}

/** The sign-in page, coming back to `next` (a path on this site) once signed in; `cookies` are set with it. */
export function signInRedirect(next: string, cookies: readonly string[] = []): Response {
  return redirect(
    `/signin?next=${encodeURIComponent(next)}`,
    cookies.map((c): [string, string] => ["Set-Cookie", c]),
  );
}

export function parseCookies(header: string | null): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    if (!out.has(name)) out.set(name, decodeURIComponent(part.slice(eq + 1).trim()));
  }
  return out;
}

export interface CookieOptions {
  maxAgeSeconds?: number;
  secure: boolean;
}

/** Always HttpOnly, SameSite=Lax, Path=/ (Lax keeps the session on the top-level redirect back from a client). */
export function serializeCookie(name: string, value: string, options: CookieOptions): string {
  const parts = [`${name}=${encodeURIComponent(value)}`, "Path=/", "HttpOnly", "SameSite=Lax"];
  if (options.maxAgeSeconds !== undefined) parts.push(`Max-Age=${options.maxAgeSeconds}`);
  if (options.secure) parts.push("Secure");
  return parts.join("; ");
}

/**
 * The path and query `target` leads to when a browser resolves it against `origin`, or null when it leaves that
 * origin. Resolving first is what makes this safe: browsers drop tabs and line breaks, read a backslash as `/`, decode
 * `%2e` and collapse `.`/`..` segments, so `/.//evil.com`, `/%2e//evil.com`, `/a/..//evil.com` or `/\t/evil.com`
 * all become `//evil.com`, which a browser follows to another host. The normalised result never starts with `//`.
 */
export function localPath(target: string, origin: string): string | null {
  if (target.length > 4096) return null;
  let url: URL;
  try {
    url = new URL(target, origin);
  } catch {
    return null;
  }
  if (url.origin !== new URL(origin).origin) return null;
  if (url.pathname.startsWith("//") || url.pathname.startsWith("/\\")) return null;
  return url.pathname + url.search;
}

/** A `next` target is followed only when it stays on this origin (see localPath); anything else goes to `fallback`. */
export function safeNext(next: string | null | undefined, baseUrl: string, fallback = "/dashboard"): string {
  if (!next) return fallback;
  return localPath(next, baseUrl) ?? fallback;
}
