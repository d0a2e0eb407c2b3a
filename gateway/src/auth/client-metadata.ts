import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { z } from "zod";
import { metadataProblem, redirectUriProblem } from "./client-rules.ts";
import type { AuthContext } from "./context.ts";
import { readCapped } from "./http.ts";
import { isSpecialPurposeAddress } from "@hatch/shared";

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
});

export type FetchedDocument =
  | { ok: true; name: string; redirectUris: string[]; document: Record<string, unknown> }
  | { ok: false; reason: string };

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

/**
 * Checks the URL and picks the address to connect to. The name is resolved once: the fetch goes to the address
 * checked here (a second lookup could answer differently: DNS rebinding). Plain http and special-purpose
 * addresses only with allowInsecureClientMetadata.
 */
async function target(ctx: AuthContext, clientId: string): Promise<Target | { problem: string }> {
  if (!URL.canParse(clientId)) return { problem: "The client id is not a valid URL." };
  const url = new URL(clientId);
  if (url.hash || url.username || url.password || url.pathname === "/")
    return { problem: "A client id URL needs a path and no fragment or credentials." };
  if (ctx.config.allowInsecureClientMetadata) return { url: clientId };
  if (url.protocol !== "https:") return { problem: "A client id URL must use https." };
  // The server fetches a URL chosen by a stranger: refuse anything that reaches inside our own network.
  const literal = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(literal)) return isSpecialPurposeAddress(literal) ? { problem: PRIVATE } : { url: clientId };
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
): Promise<{ ok: true; body: string } | { ok: false; reason: string }> {
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
      : { ok: true, body };
  } catch (error) {
    ctx.logger.warn("client metadata fetch failed", {
      clientId,
      error: error instanceof Error ? error.name : "unknown",
    });
    return { ok: false, reason: "The client's metadata document could not be fetched." };
  }
}

/** Fetches and checks a Client ID Metadata Document: its `client_id` must be exactly the URL it was fetched from. */
export async function fetchMetadataDocument(ctx: AuthContext, clientId: string): Promise<FetchedDocument> {
  const to = await target(ctx, clientId);
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
  return {
    ok: true,
    name: doc.client_name ?? new URL(clientId).host,
    redirectUris: doc.redirect_uris,
    document: json as Record<string, unknown>,
  };
}
