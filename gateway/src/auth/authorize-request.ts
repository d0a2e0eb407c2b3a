import { redirectUriAllowed } from "./client-rules.ts";
import { resolveClient, type ClientRecord } from "./clients.ts";
import type { AuthContext, GrantScope } from "./context.ts";
import { CODE_CHALLENGE } from "./crypto.ts";
import type { Params } from "./http.ts";

/** A validated authorization request: everything the consent page shows and the code is bound to. */
export interface AuthorizeRequest {
  client: ClientRecord;
  redirectUri: string;
  state: string | undefined;
  codeChallenge: string;
  resource: string;
  /** The most the client asked for: "write" (full) unless it asked for read only. */
  scope: GrantScope;
}

export type AuthorizeCheck =
  /**
   * Client or redirect URI cannot be trusted: show an error page, never redirect (open-redirect protection).
   * `retryAfter` (seconds): the client's metadata document was not fetched because a fetch budget is spent.
   */
  | { kind: "page"; message: string; retryAfter?: number }
  /** Everything else goes back to the client's redirect URI (RFC 6749 §4.1.2.1). */
  | { kind: "redirect"; redirectUri: string; state: string | undefined; error: string; description: string }
  | { kind: "ok"; request: AuthorizeRequest };

async function checkClient(
  ctx: AuthContext,
  params: Params,
  source: string,
): Promise<{ client: ClientRecord; redirectUri: string } | { message: string; retryAfter?: number }> {
  const clientId = params.get("client_id");
  if (!clientId) return { message: "The application did not say who it is (client_id is missing)." };
  const found = await resolveClient(ctx, clientId, source);
  if (!found.ok) return { message: found.reason, retryAfter: found.retryAfter };
  if (found.client.registration === "builtin") return { message: "This client cannot sign in through the browser." };
  const asked = params.get("redirect_uri");
  const only = found.client.redirectUris.length === 1 ? found.client.redirectUris[0] : undefined;
  const redirectUri = asked ?? only;
  if (!redirectUri) return { message: "The application did not say where to return (redirect_uri is missing)." };
  if (!redirectUriAllowed(found.client, redirectUri))
    return { message: "The application asked to return to an address it did not register." };
  return { client: found.client, redirectUri };
}

/** "read" only when the client asked for read and not write; unknown scopes are ignored (RFC 6749 §3.3 lets us). */
function requestedScope(raw: string | undefined): GrantScope {
  const asked = new Set((raw ?? "").split(" ").filter(Boolean));
  return asked.has("read") && !asked.has("write") ? "read" : "write";
}

/** Checks an authorization request made from `source` (the requester's address key: metadata fetches count on it). */
export async function checkAuthorizeRequest(ctx: AuthContext, params: Params, source: string): Promise<AuthorizeCheck> {
  const trusted = await checkClient(ctx, params, source);
  if ("message" in trusted) return { kind: "page", message: trusted.message, retryAfter: trusted.retryAfter };
  const state = params.get("state");
  const fail = (error: string, description: string): AuthorizeCheck => ({
    kind: "redirect",
    redirectUri: trusted.redirectUri,
    state,
    error,
    description,
  });
  if (params.repeated.length)
    return fail("invalid_request", `Parameter sent more than once: ${params.repeated.join(", ")}.`);
  if (params.get("response_type") !== "code")
    return fail("unsupported_response_type", "Only response_type=code is supported.");
  const challenge = params.get("code_challenge");
  if (!challenge || !CODE_CHALLENGE.test(challenge))
    return fail("invalid_request", "PKCE is required: send a code_challenge (S256).");
  if (params.get("code_challenge_method") !== "S256")
    return fail("invalid_request", "Only code_challenge_method=S256 is supported.");
  if (!isMcpResource(params.get("resource"), ctx.config.mcpUrl))
    return fail("invalid_target", `The only resource here is ${ctx.config.mcpUrl}.`);
  const resource = ctx.config.mcpUrl;
  if (state !== undefined && state.length > 2048) return fail("invalid_request", "state is too long.");
  return {
    kind: "ok",
    request: {
      client: trusted.client,
      redirectUri: trusted.redirectUri,
      state,
      codeChallenge: challenge,
      resource,
      scope: requestedScope(params.get("scope")),
    },
  };
}

/** The client's redirect URI with our answer added (its own query kept), plus `iss` (RFC 9207) against mix-up. */
export function redirectWith(
  ctx: AuthContext,
  redirectUri: string,
  answer: Record<string, string | undefined>,
): string {
  const url = new URL(redirectUri);
  for (const [key, value] of Object.entries({ ...answer, iss: ctx.config.baseUrl })) {
    if (value !== undefined) url.searchParams.set(key, value);
  }
  return url.toString();
}

/**
 * RFC 8707 `resource`: the MCP endpoint, or absent. A client that names the URL it was given, tool groups included
 * (`/mcp?features=apps`), means the same resource: the query is the connection's choice, not another server.
 */
export function isMcpResource(given: string | undefined, mcpUrl: string): boolean {
  if (given === undefined) return true;
  return given.split("?")[0] === mcpUrl;
}
