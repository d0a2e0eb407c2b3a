import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { z } from "zod";
import { freshForMs, type ClientDocument } from "./client-documents.ts";
import { applicationTypeProblem, metadataProblem, redirectUriProblem } from "./client-rules.ts";
import type { AuthContext } from "./context.ts";
import { readCapped } from "./http.ts";
import { isSpecialPurposeAddress } from "@hatch/platform";

const TIMEOUT_MS = 5_000;
const MAX_BYTES = 64 * 1024;

/** A client id that is the URL of its own metadata document (CIMD) rather than one we issued. */
export function isMetadataClientId(clientId: string): boolean {
  return clientId.startsWith("https://") || clientId.startsWith("http://");
}

const DocumentSchema = z.object({
  client_id: z.string(),
  client_name: z.string().trim().min(1).max(200).optional(),
  redirect_uris: z.array(z.string()).min(1).max(20),
  token_endpoint_auth_method: z.string().optional(),
  grant_types: z.array(z.string()).optional(),
  response_types: z.array(z.string()).optional(),
  application_type: z.unknown().optional(),
});

export type FetchedDocument =
  /** `freshMs`: how long its HTTP caching lets it be reused (0: not at all). */
  | ({ ok: true; freshMs: number } & ClientDocument)
  /** `retryAfter` (seconds) when a fetch budget refused it. */
  | { ok: false; reason: string; retryAfter?: number };

/** Where to connect for a client id URL: the address that was checked, and the name for Host and TLS. */
interface Target {
  /** The URL with its host replaced by the checked address (unchanged for IP literals and in unsafe mode). */
  url: string;
  /** The name the server expects: Host header and TLS server name (SNI and certificate check). */
  host?: { header: string; serverName: string };
}

/** Every address of a name, as the system resolver answers (the default of AuthContext.resolveHost). */
export async function resolveHostAddresses(hostname: string): Promise<string[]> {
  return (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);
}

/** The host of a URL as a bare name or address (an IPv6 literal without its brackets). */
const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, "").toLowerCase();

/** What can be told from the URL alone: its shape, https, and that an address written in it is a public one. */
function checkUrl(ctx: AuthContext, clientId: string): URL | { problem: string } {
  if (!URL.canParse(clientId)) return { problem: "The client id is not a valid URL." };
  const url = new URL(clientId);
  if (url.hash || url.username || url.password || url.pathname === "/")
    return { problem: "A client id URL needs a path and no fragment or credentials." };
  if (ctx.config.allowInsecureClientMetadata) return url;
  if (url.protocol !== "https:") return { problem: "A client id URL must use https." };
  // The server fetches a URL chosen by a stranger: refuse anything that reaches inside our own network.
  return isIP(hostOf(url)) && isSpecialPurposeAddress(hostOf(url)) ? { problem: PRIVATE } : url;
}

/**
 * Picks the address to connect to. The name is resolved once: the fetch goes to the address checked here (a second
 * lookup could answer differently: DNS rebinding). Plain http and special-purpose addresses only with
 * allowInsecureClientMetadata.
 */
async function target(ctx: AuthContext, clientId: string, url: URL): Promise<Target | { problem: string }> {
  if (ctx.config.allowInsecureClientMetadata || isIP(hostOf(url))) return { url: clientId };
  const addresses = await ctx.resolveHost(url.hostname).catch(() => []);
  if (addresses.length === 0) return { problem: "The client id URL's host does not resolve." };
  if (addresses.some(isSpecialPurposeAddress)) return { problem: PRIVATE };
  const address = addresses[0]!;
  const pinned = new URL(clientId);
  pinned.hostname = isIP(address) === 6 ? `[${address}]` : address;
  return { url: pinned.href, host: { header: url.host, serverName: url.hostname } };
}

const PRIVATE = "The client id URL points to a private or special-purpose address.";

async function download(
  ctx: AuthContext,
  clientId: string,
  to: Target,
): Promise<{ ok: true; body: string; headers: Headers } | { ok: false; reason: string }> {
  try {
    const response = await ctx.fetchClientMetadata(to.url, {
      headers: { Accept: "application/json", ...(to.host ? { Host: to.host.header } : {}) },
      // Bun's fetch checks the certificate against serverName and sends it as SNI, though it connects to an address.
      ...(to.host ? { tls: { serverName: to.host.serverName } } : {}),
      redirect: "error",
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    if (response.status !== 200)
      return { ok: false, reason: `The client's metadata document answered HTTP ${response.status}.` };
    const declared = Number(response.headers.get("content-length") ?? "0");
    const body = declared > MAX_BYTES ? null : await readCapped(response.body, MAX_BYTES);
    return body === null
      ? { ok: false, reason: "The client's metadata document is larger than 64 KiB." }
      : { ok: true, body, headers: response.headers };
  } catch (error) {
    ctx.logger.warn("client metadata fetch failed", {
      clientId,
      error: error instanceof Error ? error.name : "unknown",
    });
    return { ok: false, reason: "The client's metadata document could not be fetched." };
  }
}

/**
 * Counts one fetch against the requester's address and the document's host name (the shared rate counter, so the
 * budgets hold across gateway copies); the refusal when either is spent. A stranger's link makes Hatch fetch: this
 * bounds what one address can make it fetch, and what it fetches from one site whoever asks.
 */
async function spendFetchBudget(
  ctx: AuthContext,
  source: string,
  host: string,
): Promise<{ ok: false; reason: string; retryAfter: number } | null> {
  const { metadataSource, metadataHost } = ctx.throttles;
  const inMinutes = (wait: number) => `Try again in ${Math.ceil(wait / 60)} minute(s).`;
  const sourceWait = await metadataSource.take(source);
  if (sourceWait > 0) {
    ctx.logger.warn("client metadata fetch throttled", { by: "source" });
    const reason = `Hatch fetched too many applications' metadata documents for requests from your network (${metadataSource.limit} an hour). ${inMinutes(sourceWait)}`;
    return { ok: false, reason, retryAfter: sourceWait };
  }
  const hostWait = await metadataHost.take(host);
  if (hostWait > 0) {
    await metadataSource.undo(source);
    ctx.logger.warn("client metadata fetch throttled", { by: "host", host });
    const reason = `Hatch fetched too many applications' metadata documents from ${host} in the last hour (${metadataHost.limit} an hour). ${inMinutes(hostWait)}`;
    return { ok: false, reason, retryAfter: hostWait };
  }
  return null;
}

/**
 * Fetches and checks a Client ID Metadata Document for a request from `source` (its address key): its `client_id`
 * must be exactly the URL it was fetched from. Every fetch spends the fetch budgets; the caller keeps what it got
 * only for `freshMs`.
 */
export async function fetchMetadataDocument(
  ctx: AuthContext,
  clientId: string,
  source: string,
): Promise<FetchedDocument> {
  const url = checkUrl(ctx, clientId);
  if ("problem" in url) return { ok: false, reason: url.problem };
  const refused = await spendFetchBudget(ctx, source, hostOf(url));
  if (refused) return refused;
  const to = await target(ctx, clientId, url);
  if ("problem" in to) return { ok: false, reason: to.problem };
  const downloaded = await download(ctx, clientId, to);
  if (!downloaded.ok) return downloaded;
  let json: unknown;
  try {
    json = JSON.parse(downloaded.body);
  } catch {
    return { ok: false, reason: "The client's metadata document is not JSON." };
  }
  const parsed = DocumentSchema.safeParse(json);
  if (!parsed.success)
    return { ok: false, reason: "The client's metadata document lacks redirect_uris or has invalid fields." };
  const doc = parsed.data;
  if (doc.client_id !== clientId)
    return { ok: false, reason: "The client's metadata document names a different client_id than its own URL." };
  const bad = doc.redirect_uris.find((uri) => redirectUriProblem(uri) !== null);
  if (bad !== undefined)
    return { ok: false, reason: "The client's metadata document lists a redirect URI Hatch refuses." };
  const metaProblem = metadataProblem(doc);
  if (metaProblem) return { ok: false, reason: metaProblem };
  const typeProblem = applicationTypeProblem(doc);
  if (typeProblem)
    return { ok: false, reason: `The client's metadata document is refused: ${typeProblem.description}` };
  return {
    ok: true,
    name: doc.client_name ?? new URL(clientId).host,
    redirectUris: doc.redirect_uris,
    document: json as Record<string, unknown>,
    freshMs: freshForMs(downloaded.headers, ctx.now()),
  };
}
