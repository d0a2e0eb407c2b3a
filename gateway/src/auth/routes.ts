import type { Server } from "bun";
import { Elysia } from "elysia";
import { addressKey, clientAddressOf } from "@hatch/platform";
import { htmlResponse } from "../pages/layout.ts";
import type { AccessTokens } from "./access-tokens.ts";
import {
  showLanding,
  showSignIn,
  showSignUp,
  showRevoke,
  showTokens,
  submitRevoke,
  submitSignIn,
  submitSignOut,
  submitSignUp,
} from "./account-pages.ts";
import { answerAuthorize, showAuthorize } from "./authorize.ts";
import { registerClient } from "./clients.ts";
import type { AuthContext } from "./context.ts";
import { BodyTooLargeError } from "./errors.ts";
import { jsonResponse, oauthError, readBodyText } from "./http.ts";
import { authorizationServerMetadata, protectedResourceMetadata } from "./metadata.ts";
import { showForgot, showReset, submitForgot, submitReset } from "./password-reset.ts";
import { handleRevoke, handleToken } from "./token-endpoint.ts";
import { showVerifyEmail, submitResend } from "./verify-email.ts";
import { errorPage } from "./views.ts";

type Handler = (request: Request) => Promise<Response>;
type PageHandler = (ctx: AuthContext, request: Request, source: string) => Promise<Response>;

/**
 * The client's address, the key of the per-address limits: the connection's, or with TRUST_PROXY the last entry of
 * X-Forwarded-For (the one our proxy added; entries before it are whatever the client sent). "unknown" when
 * neither exists (the app driven in-process): those requests share one budget.
 */
export function clientAddress(
  trustProxy: boolean,
  request: Request,
  server: Server<unknown> | null | undefined,
): string {
  const address = clientAddressOf(request, trustProxy, server?.requestIP(request)?.address);
  return address ? addressKey(address.slice(0, 64)) : "unknown";
}

/**
 * Endpoints that MCP clients running in a browser (the MCP Inspector, web IDEs) call cross-origin. No cookies
 * are involved there, so any origin may call them; the browser pages get no CORS at all.
 */
const CORS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
  "Access-Control-Allow-Headers": "Content-Type, Authorization, MCP-Protocol-Version",
  "Access-Control-Max-Age": "86400",
};

function withCors(response: Response): Response {
  for (const [key, value] of Object.entries(CORS)) response.headers.set(key, value);
  return response;
}

/** Unexpected errors are logged with detail and answered without any; oversized bodies get 413. */
function guard(ctx: AuthContext, kind: "json" | "html", handler: Handler): Handler {
  return async (request) => {
    try {
      return await handler(request);
    } catch (error) {
      if (error instanceof BodyTooLargeError) {
        return kind === "json"
          ? oauthError("invalid_request", "The request body is too large.", 413)
          : htmlResponse("Request body too large", { status: 413 });
      }
      ctx.logger.error("auth route failed", { path: new URL(request.url).pathname, error });
      if (kind === "json") return oauthError("server_error", "Something went wrong on our side. Try again.", 500);
      return htmlResponse(
        errorPage(
          { user: null, csrfToken: "" },
          "Something went wrong",
          "Something went wrong on our side. Try again.",
        ),
        { status: 500 },
      );
    }
  };
}

async function register(ctx: AuthContext, request: Request, source: string): Promise<Response> {
  const limit = ctx.throttles.registerSource;
  const wait = await limit.take(source);
  if (wait > 0) {
    ctx.logger.warn("client registration throttled");
    const description = `Too many client registrations from this address (${limit.limit} an hour). Try again in ${Math.ceil(wait / 60)} minute(s), or reuse the client already registered.`;
    return jsonResponse({ error: "temporarily_unavailable", error_description: description }, 429, {
      "Cache-Control": "no-store",
      "Retry-After": String(wait),
    });
  }
  const text = await readBodyText(request, ctx.config.maxBodyBytes);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return jsonResponse({ error: "invalid_client_metadata", error_description: "The body must be JSON." }, 400);
  }
  const result = await registerClient(ctx, body);
  if (!result.ok)
    return jsonResponse({ error: result.error, error_description: result.description }, 400, {
      "Cache-Control": "no-store",
    });
  return jsonResponse(result.body, 201, { "Cache-Control": "no-store" });
}

export function buildRoutes(ctx: AuthContext, tokens: AccessTokens) {
  const json = (handler: Handler): Handler => {
    const guarded = guard(ctx, "json", handler);
    return async (request) => withCors(await guarded(request));
  };
  // `listener` is the Bun server the request came through (null when driven in-process); it knows the address.
  type Sourced = (request: Request, listener?: Server<unknown> | null) => Promise<Response>;
  const source = (request: Request, listener: Server<unknown> | null | undefined) =>
    clientAddress(ctx.config.trustProxy, request, listener);
  const page =
    (handler: PageHandler): Sourced =>
    (request, listener) =>
      guard(ctx, "html", (r) => handler(ctx, r, source(r, listener)))(request);
  const resource = json(async () =>
    jsonResponse(protectedResourceMetadata(ctx.config), 200, { "Cache-Control": "public, max-age=300" }),
  );
  const server = json(async () =>
    jsonResponse(authorizationServerMetadata(ctx.config), 200, { "Cache-Control": "public, max-age=300" }),
  );
  const token = json((request) => handleToken(ctx, tokens, request));
  const revoke = json((request) => handleRevoke(ctx, tokens, request));
  const registration: Sourced = (request, listener) => json((r) => register(ctx, r, source(r, listener)))(request);
  const preflight = () => new Response(null, { status: 204, headers: CORS });
  const raw = { parse: "none" as const };

  const [authorizeGet, authorizePost] = [page(showAuthorize), page(answerAuthorize)];
  const [signUpGet, signUpPost, signInGet, signInPost] = [
    page(showSignUp),
    page(submitSignUp),
    page(showSignIn),
    page(submitSignIn),
  ];
  const [signOut, tokensGet, tokensRevoke, landing] = [
    page(submitSignOut),
    page(showTokens),
    page(submitRevoke),
    page(showLanding),
  ];
  const [verifyEmailGet, verifyEmailResend] = [page(showVerifyEmail), page(submitResend)];
  const revokeGet = page(showRevoke);
  const [forgotGet, forgotPost, resetGet, resetPost] = [
    page(showForgot),
    page(submitForgot),
    page(showReset),
    page(submitReset),
  ];

  return new Elysia({ name: "hatch-auth" })
    .get("/.well-known/oauth-protected-resource", ({ request }) => resource(request))
    .get("/.well-known/oauth-protected-resource/mcp", ({ request }) => resource(request))
    .get("/.well-known/oauth-authorization-server", ({ request }) => server(request))
    .get("/.well-known/openid-configuration", ({ request }) => server(request))
    .options("/.well-known/*", preflight)
    .post("/oauth/register", ({ request, server: listener }) => registration(request, listener), raw)
    .post("/oauth/token", ({ request }) => token(request), raw)
    .post("/oauth/revoke", ({ request }) => revoke(request), raw)
    .options("/oauth/register", preflight)
    .options("/oauth/token", preflight)
    .options("/oauth/revoke", preflight)
    .get("/oauth/authorize", ({ request }) => authorizeGet(request))
    .post("/oauth/authorize", ({ request }) => authorizePost(request), raw)
    .get("/signup", ({ request }) => signUpGet(request))
    .post("/signup", ({ request, server: listener }) => signUpPost(request, listener), raw)
    .get("/signin", ({ request }) => signInGet(request))
    .post("/signin", ({ request, server: listener }) => signInPost(request, listener), raw)
    .post("/signout", ({ request }) => signOut(request), raw)
    .get("/dashboard/tokens", ({ request }) => tokensGet(request))
    .get("/dashboard/tokens/revoke", ({ request }) => revokeGet(request))
    .post("/dashboard/tokens/revoke", ({ request }) => tokensRevoke(request), raw)
    .get("/forgot-password", ({ request }) => forgotGet(request))
    .post("/forgot-password", ({ request, server: listener }) => forgotPost(request, listener), raw)
    .get("/reset-password", ({ request }) => resetGet(request))
    .post("/reset-password", ({ request }) => resetPost(request), raw)
    .get("/verify-email", ({ request }) => verifyEmailGet(request))
    .post("/verify-email/resend", ({ request }) => verifyEmailResend(request), raw)
    .get("/", ({ request }) => landing(request));
}
