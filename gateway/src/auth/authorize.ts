import { htmlResponse } from "../pages/layout.ts";
import { checkAuthorizeRequest, redirectWith, type AuthorizeCheck } from "./authorize-request.ts";
import { saveMetadataClient } from "./clients.ts";
import type { AuthContext } from "./context.ts";
import { createGrant, issueCode } from "./grants.ts";
import { queryParams, readParams, redirect, type Params, signInRedirect } from "./http.ts";
import { csrfValid, readBrowserState, type BrowserState } from "./sessions.ts";
import { consentPage, errorPage } from "./views.ts";

/** The parameters that make up an authorization request, carried through sign-in and the consent form. */
const REQUEST_PARAMS = [
  "response_type",
  "client_id",
  "redirect_uri",
  "code_challenge",
  "code_challenge_method",
  "resource",
  "scope",
  "state",
];

function signInFirst(params: Params, state: BrowserState): Response {
  const query = new URLSearchParams();
  for (const name of REQUEST_PARAMS) {
    const value = params.get(name);
    if (value !== undefined) query.set(name, value);
  }
  const next = `/oauth/authorize?${query}`;
  return signInRedirect(next, state.setCookies);
}

function withCookies(state: BrowserState): [string, string][] {
  return state.setCookies.map((c) => ["Set-Cookie", c]);
}

/** The page for a request that cannot go back to the client: 400, or 429 when a metadata fetch budget is spent. */
function refusedPage(state: BrowserState, check: Extract<AuthorizeCheck, { kind: "page" }>): Response {
  const headers = withCookies(state);
  if (check.retryAfter === undefined)
    return htmlResponse(errorPage(state, "This sign-in link is not valid", check.message), { status: 400, headers });
  headers.push(["Retry-After", String(check.retryAfter)]);
  return htmlResponse(errorPage(state, "Try again later", check.message), { status: 429, headers });
}

/** GET /oauth/authorize: validate, then sign-in or the consent page. `source`: the requester's address key. */
export async function showAuthorize(ctx: AuthContext, request: Request, source: string): Promise<Response> {
  const params = queryParams(new URL(request.url));
  const check = await checkAuthorizeRequest(ctx, params, source);
  const state = await readBrowserState(ctx, request);
  if (check.kind === "page") return refusedPage(state, check);
  if (check.kind === "redirect") {
    return redirect(
      redirectWith(ctx, check.redirectUri, {
        error: check.error,
        error_description: check.description,
        state: check.state,
      }),
    );
  }
  if (!state.user) return signInFirst(params, state);
  return htmlResponse(consentPage({ ...state, user: state.user }, check.request), { headers: withCookies(state) });
}

/** POST /oauth/authorize: the consent form. Everything is validated again; hidden fields are never trusted. */
export async function answerAuthorize(ctx: AuthContext, request: Request, source: string): Promise<Response> {
  const params = await readParams(request, ctx.config.maxBodyBytes);
  const state = await readBrowserState(ctx, request);
  if (!csrfValid(ctx, request, state, params.get("csrf"))) {
    return htmlResponse(
      errorPage(
        state,
        "Please try again",
        "This form expired or came from another site. Go back, reload the page and try again.",
      ),
      {
        status: 403,
        headers: withCookies(state),
      },
    );
  }
  if (!state.user) return signInFirst(params, state);
  const check = await checkAuthorizeRequest(ctx, params, source);
  if (check.kind === "page") return refusedPage(state, check);
  if (check.kind === "redirect") {
    return redirect(
      redirectWith(ctx, check.redirectUri, {
        error: check.error,
        error_description: check.description,
        state: check.state,
      }),
    );
  }
  const { request: auth } = check;
  const decision = params.get("decision");
  if (decision !== "write" && decision !== "read") {
    return redirect(
      redirectWith(ctx, auth.redirectUri, {
        error: "access_denied",
        error_description: "The user denied access.",
        state: auth.state,
      }),
    );
  }
  // A client that asked for read only never gets write, whatever the form says.
  const scope = decision === "write" && auth.scope === "write" ? "write" : "read";
  // A metadata client gets its row now that a person approved it, from the document checked for this answer.
  if (auth.client.registration === "metadata") await saveMetadataClient(ctx, auth.client);
  const grantId = await createGrant(ctx, {
    userId: state.user.id,
    clientId: auth.client.clientId,
    scope,
    redirectUri: auth.redirectUri,
  });
  const code = await issueCode(ctx, {
    grantId,
    clientId: auth.client.clientId,
    redirectUri: auth.redirectUri,
    codeChallenge: auth.codeChallenge,
    resource: auth.resource,
  });
  ctx.logger.info("authorization granted", { userId: state.user.id, clientId: auth.client.clientId, grantId, scope });
  return redirect(redirectWith(ctx, auth.redirectUri, { code, state: auth.state }));
}
