import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { z } from "zod";
import { metadataProblem, redirectUriProblem } from "./client-rules.ts";
import type { AuthContext } from "./context.ts";
import { readCapped } from "./http.ts";

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

/** Why this URL may not be fetched, or null. Plain http and private addresses only with allowInsecureClientMetadata. */
async function urlProblem(ctx: AuthContext, clientId: string): Promise<string | null> {
  if (!URL.canParse(clientId)) return "The client id is not a valid URL.";
  const url = new URL(clientId);
  if (url.hash || url.username || url.password || url.pathname === "/") return "A client id URL needs a path and no fragment or credentials.";
  if (ctx.config.allowInsecureClientMetadata) return null;
  if (url.protocol !== "https:") return "A client id URL must use https.";
  // The server fetches a URL chosen by a stranger: refuse anything that reaches inside our own network.
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const addresses = isIP(host) ? [host] : await lookup(host, { all: true }).then((r) => r.map((a) => a.address)).catch(() => []);
  if (addresses.length === 0) return "The client id URL's host does not resolve.";
  if (addresses.some(isPrivateAddress)) return "The client id URL points to a private address.";
  return null;
}

function isPrivateAddress(ip: string): boolean {
  const v4 = ip.startsWith("::ffff:") ? ip.slice(7) : ip;
  if (isIP(v4) === 4) {
    const [a = 0, b = 0] = v4.split(".").map(Number);
    return a === 0 || a === 10 || a === 127 || a >= 224 || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127);
  }
  const lower = ip.toLowerCase();
  return lower === "::" || lower === "::1" || /^f[cd]/.test(lower) || /^fe[89ab]/.test(lower);
}

async function download(ctx: AuthContext, clientId: string): Promise<{ ok: true; body: string } | { ok: false; reason: string }> {
  try {
    const response = await ctx.fetchClientMetadata(clientId, {
      headers: { Accept: "application/json" },
      redirect: "error",
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    if (response.status !== 200) return { ok: false, reason: `The client's metadata document answered HTTP ${response.status}.` };
    const declared = Number(response.headers.get("content-length") ?? "0");
    const body = declared > MAX_BYTES ? null : await readCapped(response.body, MAX_BYTES);
    return body === null ? { ok: false, reason: "The client's metadata document is larger than 64 KiB." } : { ok: true, body };
  } catch (error) {
    ctx.logger.warn("client metadata fetch failed", { clientId, error: error instanceof Error ? error.name : "unknown" });
    return { ok: false, reason: "The client's metadata document could not be fetched." };
  }
}

/** Fetches and checks a Client ID Metadata Document: its `client_id` must be exactly the URL it was fetched from. */
export async function fetchMetadataDocument(ctx: AuthContext, clientId: string): Promise<FetchedDocument> {
  const problem = await urlProblem(ctx, clientId);
  if (problem) return { ok: false, reason: problem };
  const downloaded = await download(ctx, clientId);
  if (!downloaded.ok) return downloaded;
  let json: unknown;
  try {
    json = JSON.parse(downloaded.body);
  } catch {
    return { ok: false, reason: "The client's metadata document is not JSON." };
  }
  const parsed = DocumentSchema.safeParse(json);
  if (!parsed.success) return { ok: false, reason: "The client's metadata document lacks redirect_uris or has invalid fields." };
  const doc = parsed.data;
  if (doc.client_id !== clientId) return { ok: false, reason: "The client's metadata document names a different client_id than its own URL." };
  const bad = doc.redirect_uris.find((uri) => redirectUriProblem(uri) !== null);
  if (bad !== undefined) return { ok: false, reason: "The client's metadata document lists a redirect URI Hatch refuses." };
  const metaProblem = metadataProblem(doc);
  if (metaProblem) return { ok: false, reason: metaProblem };
  return { ok: true, name: doc.client_name ?? new URL(clientId).host, redirectUris: doc.redirect_uris, document: json as Record<string, unknown> };
}
