import { isIP } from "node:net";
import { lookup } from "node:dns/promises";
import { isSpecialPurposeAddress } from "@hatch/platform";
import { type ApiRule } from "../spec/server-code.ts";
import { DataError } from "../http/answers.ts";

// Where a declared API call goes. The base url comes from service.json; the path comes from a page or server code,
// so it must never leave the base: no dot segments (plain or percent-encoded), no encoded slashes or backslashes, no
// scheme, no `//host`. And unless API_PRIVATE_HOSTS allows it, the host must resolve to public addresses only, and
// the request goes to the address that was checked (a second lookup could answer differently: DNS rebinding).

/** Every address of a name, as the system resolver answers. */
export async function resolveHostAddresses(hostname: string): Promise<string[]> {
  return (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);
}

const invalid = (name: string, why: string) =>
  new DataError("invalid", `The path for the API ${name} ${why}. Pass a path under its base url, e.g. "/items?q=1".`);

/**
 * The full URL of a call: `path` (with an optional query) appended to the API's base url, or DataError invalid. The
 * secret's query parameter, when the API takes it there, may not be in `path`: the host adds it.
 */
export function apiUrl(name: string, api: ApiRule, path: string): URL {
  if (path !== "" && !path.startsWith("/") && !path.startsWith("?")) throw invalid(name, "must start with /");
  // Control characters, spaces, backslashes and fragments have no place in a path a browser or fetch would send.
  if (/[\u0000-\u0020\u007f\\#]/.test(path)) throw invalid(name, "has spaces, control characters, \\ or #");
  const cut = path.indexOf("?");
  const pathPart = cut === -1 ? path : path.slice(0, cut);
  const query = cut === -1 ? "" : path.slice(cut + 1);
  if (pathPart.startsWith("//")) throw invalid(name, "must not start with //");
  for (const segment of pathPart.split("/")) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      throw invalid(name, "has a broken %-escape");
    }
    if (decoded === "." || decoded === ".." || (decoded !== segment && /[/\\]/.test(decoded)))
      throw invalid(name, "must not climb out of the API's base url (. or .. segments, encoded / or \\)");
  }
  const base = new URL(api.url);
  if (base.protocol !== "https:" && base.protocol !== "http:")
    throw new DataError("invalid", `The API ${name} must use http or https.`);
  const url = new URL(base.href.replace(/\/+$/, "") + pathPart + (query ? `?${query}` : ""));
  const basePath = base.pathname.replace(/\/+$/, "");
  if (url.origin !== base.origin || (url.pathname !== basePath && !url.pathname.startsWith(`${basePath}/`))) {
    throw invalid(name, "must stay under the API's base url");
  }
  if ("query" in api.in && new URLSearchParams(query).has(api.in.query)) {
    throw new DataError(
      "invalid",
      `Do not pass the query parameter ${api.in.query} to the API ${name}: Hatch adds the secret ${api.secret} there.`,
    );
  }
  return url;
}

/** Where to connect: the URL (its host maybe replaced by the checked address) and the name for Host and TLS. */
export interface Destination {
  url: URL;
  host?: { header: string; serverName: string };
}

/**
 * Checks the host unless private hosts are allowed, and pins the connection to a checked address. Refuses with
 * `forbidden` a host on a loopback, private, link-local (cloud metadata) or other special-purpose address.
 */
export async function destination(
  name: string,
  url: URL,
  allowPrivate: boolean,
  resolveHost: (hostname: string) => Promise<string[]>,
): Promise<Destination> {
  if (allowPrivate) return { url };
  const refused = new DataError(
    "forbidden",
    `The API ${name} is on a private or special-purpose address, which apps may not call.`,
  );
  const literal = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(literal)) {
    if (isSpecialPurposeAddress(literal)) throw refused;
    return { url };
  }
  const addresses = await resolveHost(url.hostname).catch(() => []);
  if (addresses.length === 0)
    throw new DataError("unavailable", `The host of the API ${name} (${url.hostname}) does not resolve.`);
  if (addresses.some(isSpecialPurposeAddress)) throw refused;
  const address = addresses[0]!;
  const pinned = new URL(url.href);
  pinned.hostname = isIP(address) === 6 ? `[${address}]` : address;
  return { url: pinned, host: { header: url.host, serverName: url.hostname } };
}
