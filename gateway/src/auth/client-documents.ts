/**
 * Client ID Metadata Documents this gateway copy fetched, kept as long as their HTTP caching allows (RFC 9111) and
 * no longer than a day. Only in memory: another copy fetches the document itself, and nothing is written to the
 * database until a person approves the client (clients.ts saveMetadataClient).
 */

/** What Hatch takes from a checked document. */
export interface ClientDocument {
  name: string;
  redirectUris: string[];
  /** The whole document, stored with the client row when it is approved. */
  document: Record<string, unknown>;
}

/** Without Cache-Control or Expires a document is reused this long (a heuristic RFC 9111 §4.2.2 allows). */
export const DEFAULT_FRESH_MS = 5 * 60_000;
/** However long a document says it stays fresh, it is fetched again after a day (a changed redirect URI applies). */
export const MAX_FRESH_MS = 24 * 3_600_000;
const MAX_ENTRIES = 1_000;

function cacheControl(header: string | null): Map<string, string> {
  const directives = new Map<string, string>();
  for (const part of (header ?? "").split(",")) {
    const [name = "", ...value] = part.split("=");
    const key = name.trim().toLowerCase();
    if (key)
      directives.set(
        key,
        value
          .join("=")
          .trim()
          .replace(/^"(.*)"$/, "$1"),
      );
  }
  return directives;
}

/** Delta-seconds of a directive; an invalid value makes the response stale (RFC 9111 §1.2.2). */
function deltaSeconds(value: string): number {
  return /^\d+$/.test(value) ? Number(value) : 0;
}

/**
 * How long a response may be reused, in ms (0: not at all), from its headers: no-store and no-cache are never reused;
 * s-maxage, max-age or Expires give the lifetime (the Age it already has is taken off); with none, DEFAULT_FRESH_MS.
 */
export function freshForMs(headers: Headers, now: number): number {
  const directives = cacheControl(headers.get("cache-control"));
  if (directives.has("no-store") || directives.has("no-cache")) return 0;
  const age = deltaSeconds(headers.get("age") ?? "0") * 1000;
  let lifetime = DEFAULT_FRESH_MS;
  const maxAge = directives.get("s-maxage") ?? directives.get("max-age");
  if (maxAge !== undefined) lifetime = deltaSeconds(maxAge) * 1000;
  else if (headers.has("expires")) {
    // An Expires that is not a date means already expired (RFC 9111 §5.3).
    const expires = Date.parse(headers.get("expires") ?? "");
    const date = Date.parse(headers.get("date") ?? "");
    lifetime = Number.isNaN(expires) ? 0 : expires - (Number.isNaN(date) ? now : date);
  }
  return Math.min(MAX_FRESH_MS, Math.max(0, lifetime - age));
}

/** Fresh documents by client id URL; bounded (the least recently stored go first). */
export class ClientDocumentCache {
  private readonly entries = new Map<string, { document: ClientDocument; until: number }>();

  constructor(private readonly now: () => number) {}

  /** The document while it is fresh, else null (and it is forgotten). */
  get(clientId: string): ClientDocument | null {
    const entry = this.entries.get(clientId);
    if (!entry) return null;
    if (entry.until > this.now()) return entry.document;
    this.entries.delete(clientId);
    return null;
  }

  /** Keeps it for `freshMs`; a document that may not be reused replaces nothing and is not kept. */
  set(clientId: string, document: ClientDocument, freshMs: number): void {
    this.entries.delete(clientId);
    if (freshMs <= 0) return;
    this.entries.set(clientId, { document, until: this.now() + freshMs });
    if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
  }
}
