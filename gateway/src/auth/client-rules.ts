/** What Hatch accepts from a client: redirect URIs and the parts of client metadata that matter. */

export interface RedirectTarget {
  redirectUris: string[];
}

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);
const REFUSED_SCHEMES = new Set([
  "javascript:",
  "data:",
  "file:",
  "blob:",
  "vbscript:",
  "about:",
  "filesystem:",
  "ws:",
  "wss:",
  "ftp:",
]);

/**
 * Why a redirect URI is refused, or null when fine: https anywhere; http only on loopback (native apps, RFC 8252
 * §7.3); private-use schemes such as cursor:// or vscode://; never script, data or file URLs, never a fragment.
 */
export function redirectUriProblem(uri: string): string | null {
  if (uri.length > 2000 || !URL.canParse(uri)) return "is not a valid absolute URL";
  const url = new URL(uri);
  if (url.hash || uri.includes("#")) return "must not contain a fragment";
  if (url.username || url.password) return "must not contain credentials";
  if (url.protocol === "https:") return url.hostname ? null : "needs a host";
  if (url.protocol === "http:")
    return LOOPBACK_HOSTS.has(url.hostname) ? null : "may use http only on localhost, 127.0.0.1 or [::1]";
  if (REFUSED_SCHEMES.has(url.protocol) || !/^[a-z][a-z0-9+.-]*:$/.test(url.protocol))
    return `uses a refused scheme (${url.protocol})`;
  return null;
}

/** Exact match, except that the port of a loopback redirect may change between runs (RFC 8252 §7.3). */
export function redirectUriAllowed(client: RedirectTarget, uri: string): boolean {
  if (client.redirectUris.includes(uri)) return true;
  if (!URL.canParse(uri)) return false;
  const asked = new URL(uri);
  if (asked.protocol !== "http:" || !LOOPBACK_HOSTS.has(asked.hostname)) return false;
  return client.redirectUris.some((registered) => {
    if (!URL.canParse(registered)) return false;
    const r = new URL(registered);
    return (
      r.protocol === "http:" &&
      r.hostname === asked.hostname &&
      r.pathname === asked.pathname &&
      r.search === asked.search
    );
  });
}

/** Shared by registration and metadata documents: public clients using the code flow only. */
export function metadataProblem(meta: {
  token_endpoint_auth_method?: string;
  grant_types?: string[];
  response_types?: string[];
}): string | null {
  if (meta.token_endpoint_auth_method !== undefined && meta.token_endpoint_auth_method !== "none") {
    return 'token_endpoint_auth_method must be "none": Hatch issues no client secrets.';
  }
  if (meta.grant_types?.some((g) => g !== "authorization_code" && g !== "refresh_token")) {
    return "grant_types may hold only authorization_code and refresh_token.";
  }
  if (meta.response_types?.some((r) => r !== "code")) return 'response_types may hold only "code".';
  return null;
}

export type ApplicationType = "native" | "web";

/**
 * OpenID Connect Dynamic Client Registration `application_type`, which MCP 2026-07-28 clients send: "native" (desktop
 * apps, CLIs, anything redirecting to loopback or a private-use scheme) or "web" (a site on a public host). When given,
 * the redirect URIs must fit it: a "web" client may not register a loopback or private-use scheme redirect, which
 * any program on a person's computer could catch; a "native" one uses those, or an https URL it claims (RFC 8252
 * §7.2). When absent nothing is assumed (Hatch is no OpenID provider, and 2025-era clients do not send it).
 */
export function applicationTypeProblem(meta: {
  application_type?: unknown;
  redirect_uris: string[];
}): { error: "invalid_client_metadata" | "invalid_redirect_uri"; description: string } | null {
  const type = meta.application_type;
  if (type === undefined) return null;
  if (type !== "native" && type !== "web")
    return { error: "invalid_client_metadata", description: 'application_type must be "native" or "web".' };
  if (type === "native") return null;
  const local = meta.redirect_uris.find((uri) => {
    if (!URL.canParse(uri)) return false;
    const url = new URL(uri);
    return url.protocol !== "https:" || LOOPBACK_HOSTS.has(url.hostname);
  });
  if (local === undefined) return null;
  return {
    error: "invalid_redirect_uri",
    description: `redirect URI ${JSON.stringify(local.slice(0, 200))} is a loopback or private-use scheme address, which only an application_type "native" client may register.`,
  };
}
