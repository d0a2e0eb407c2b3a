// How a request path becomes a file of a published version, and how long a browser may keep that file.
// Stored paths are relative, with forward slashes and no `.`/`..` parts (the publish contract's FilePathSchema),
// and a file is found only by exact lookup in the version's file map: nothing here touches a file system path.

/**
 * The request path as a stored-path key: "" for `/`, "dir/" for `/dir/`, "a/b.js" for `/a/b.js`. Each segment is
 * percent-decoded on its own, so `%2F` can never become a separator. Returns null for a path no file can have:
 * bad percent-encoding, an encoded `/` or `\`, a NUL, a `.` or `..` segment, or an empty inner segment.
 */
export function storedPathOf(pathname: string): string | null {
  if (!pathname.startsWith("/")) return null;
  const rest = pathname.slice(1);
  // The hot path: nothing to decode or check.
  if (!/[%\\\0]|(?:^|\/)\.\.?(?:\/|$)|\/\//.test(rest)) return rest;
  const segments = rest.split("/");
  const out: string[] = [];
  for (let i = 0; i < segments.length; i++) {
    const raw = segments[i]!;
    if (raw === "") {
      if (i === segments.length - 1) {
        out.push("");
        continue;
      }
      return null;
    }
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      return null;
    }
    if (segment === "." || segment === ".." || /[/\\\0]/.test(segment)) return null;
    out.push(segment);
  }
  return out.join("/");
}

/** The stored paths a request path may mean, in order: `/` → index.html, `/dir/` → dir/index.html, `/about` → about, about.html, about/index.html. */
export function candidatesOf(path: string): string[] {
  if (path === "" || path.endsWith("/")) return [`${path}index.html`];
  return [path, `${path}.html`, `${path}/index.html`];
}

/** Whether the last segment has a file extension (`.js`, `.png`): such paths never fall back to the SPA's index.html. */
export function hasExtension(path: string): boolean {
  const last = path.slice(path.lastIndexOf("/") + 1);
  return /\.[A-Za-z0-9]+$/.test(last);
}

/**
 * A name part of 8+ characters of [A-Za-z0-9_-] after `-` or `.`, right before the extension (`index-B1a2C3d4.js`,
 * `main.3f2a1b9c.css`, `chunk-D_Bq-x9Z.js.map`): the bundler's content hash. One refinement keeps plain names out:
 * the part must contain a digit or a capital letter, so `my-component-library.js` or `bundle.production.js`,
 * which can change under the same name, are not cached for a year. A hash without either (about one in four of
 * 8-character base64url hashes, none of longer hex ones in practice) just gets the short cache: safe, only slower.
 */
const HASHED = /[-.]([A-Za-z0-9_-]{8,})(?:\.[A-Za-z0-9]+){1,2}$/;

export function isHashedAsset(path: string): boolean {
  const name = path.slice(path.lastIndexOf("/") + 1);
  const match = HASHED.exec(name);
  return match !== null && /[0-9A-Z]/.test(match[1]!);
}

export function isHtml(contentType: string): boolean {
  const type = contentType.toLowerCase();
  return type.startsWith("text/html") || type.startsWith("application/xhtml+xml");
}

/**
 * HTML always revalidates (a new version must show at once); hashed assets are immutable for a year; anything else
 * gets a minute, then revalidates (its ETag makes that a 304). `private` for apps not visible to everyone, so no
 * shared cache keeps a copy one viewer was allowed to see.
 */
export function cacheControlOf(path: string, contentType: string, isPublic: boolean): string {
  const scope = isPublic ? "public" : "private";
  if (isHtml(contentType)) return isPublic ? "no-cache" : "private, no-cache";
  if (isHashedAsset(path)) return `${scope}, max-age=31536000, immutable`;
  return `${scope}, max-age=60, must-revalidate`;
}

/** `If-None-Match` against a quoted sha256 ETag: a list, weak forms, or `*`. */
export function etagMatches(header: string | null, etag: string): boolean {
  if (header === null) return false;
  if (header === etag) return true;
  for (const part of header.split(",")) {
    const tag = part.trim();
    if (tag === "*" || tag === etag || tag === `W/${etag}`) return true;
  }
  return false;
}

/**
 * Where `/_hatch/auth` may send the browser: a path on the app's own origin, as an absolute URL. The WHATWG parser
 * drops tabs and newlines and reads `/\host` as `//host` the way browsers do, so the origin check catches those.
 */
export function sameOriginTarget(path: string | null, origin: string): string {
  if (!path || !path.startsWith("/") || path.length > 4096) return `${origin}/`;
  try {
    const url = new URL(path, origin);
    return url.origin === origin ? `${origin}${url.pathname}${url.search}` : `${origin}/`;
  } catch {
    return `${origin}/`;
  }
}
