import { createHash } from "node:crypto";
import { placementText, type ApiPlacement } from "@hatch/contracts";
import type { BoundDestination } from "../db/schema.ts";

// A secret is bound to the destinations its owner saw on the page when typing or confirming it: for each API, the
// origin, the base path and where in the request the value goes. A later publish may point an API elsewhere (another
// host, another path, the value moved from a header into the query); that API then gets no value until the owner
// confirms the new destination on the same page. Urls are compared in their parsed form (scheme and host lower-cased,
// default port dropped, trailing slashes trimmed), header names without case.

/** An API of the current version's service.json that uses a secret. */
export interface SecretUse {
  name: string;
  /** The API's base url. */
  url: string;
  /** Where the value goes in the request. */
  in: ApiPlacement;
}

/** The destination's origin and base path, e.g. "https://api.weather.example/v1"; the url as given when it does not parse. */
export function canonicalUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return parsed.origin + parsed.pathname.replace(/\/+$/, "");
  } catch {
    return url;
  }
}

function samePlacement(a: ApiPlacement, b: ApiPlacement): boolean {
  if ("query" in a || "query" in b) return "query" in a && "query" in b && a.query === b.query;
  return a.header.toLowerCase() === b.header.toLowerCase() && (a.prefix ?? "") === (b.prefix ?? "");
}

export function sameDestination(a: { url: string; in: ApiPlacement }, b: { url: string; in: ApiPlacement }): boolean {
  return canonicalUrl(a.url) === canonicalUrl(b.url) && samePlacement(a.in, b.in);
}

/** Whether the value may go to this destination. */
export function isConfirmed(bound: readonly BoundDestination[], to: { url: string; in: ApiPlacement }): boolean {
  return bound.some((d) => sameDestination(d, to));
}

/** What a page's save or confirm binds the value to: the apis that use it now. */
export function bindingOf(uses: readonly SecretUse[]): BoundDestination[] {
  return uses.map((use) => ({ api: use.name, url: canonicalUrl(use.url), in: use.in }));
}

/** A digest of the destinations a page shows; the form carries it back so a publish in between is noticed. */
export function shownDigest(uses: readonly SecretUse[]): string {
  const canonical = bindingOf(uses).map((d) => [
    d.api,
    d.url,
    "query" in d.in ? ["query", d.in.query] : ["header", d.in.header.toLowerCase(), d.in.prefix ?? ""],
  ]);
  return createHash("sha256").update(JSON.stringify(canonical)).digest("base64url").slice(0, 32);
}

/** An api that uses the secret but whose destination the owner has not confirmed. */
export interface Unconfirmed {
  api: string;
  url: string;
  in: ApiPlacement;
  /** Where this api sent it when last confirmed; null when it never did. */
  was: { url: string; in: ApiPlacement } | null;
}

/** The apis (of `uses`) the value is not sent to; none when no value is set (there is nothing to confirm then). */
export function unconfirmedUses(bound: readonly BoundDestination[], uses: readonly SecretUse[]): Unconfirmed[] {
  return uses
    .filter((use) => !isConfirmed(bound, use))
    .map((use) => {
      const before = bound.find((d) => d.api === use.name);
      return { api: use.name, url: use.url, in: use.in, was: before ? { url: before.url, in: before.in } : null };
    });
}

/** "https://x.example/v1, in the query parameter key", for the texts an AI reads. */
export const destinationText = (to: { url: string; in: ApiPlacement }) => `${to.url}, in ${placementText(to.in)}`;
