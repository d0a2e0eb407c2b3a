import { htmlResponse } from "../pages/layout.ts";
import type { AuthContext } from "./context.ts";
import { AuthInputError } from "./errors.ts";
import { findGrant, listConnectedClients } from "./grants.ts";
import { redirect, safeNext, signInRedirect } from "./http.ts";
import { endSession, readBrowserState, startSession, type BrowserState } from "./sessions.ts";
import { createUser, checkPassword, formEmailProblem } from "./users.ts";
import { sendVerification } from "./verify-email.ts";
import { cookieHeaders, readForm } from "./forms.ts";

import { landingPage } from "../pages/landing.ts";
import { pendingClient } from "./pending-authorization.ts";
import { emailTakenError, revokePage, signInPage, signUpPage, tokensPage } from "./views.ts";

const nextOf = (ctx: AuthContext, request: Request) =>
  safeNext(new URL(request.url).searchParams.get("next"), ctx.config.baseUrl);

export async function showSignUp(ctx: AuthContext, request: Request, source: string): Promise<Response> {
  const state = await readBrowserState(ctx, request);
  const next = nextOf(ctx, request);
  const client = await pendingClient(ctx, next, source);
  return htmlResponse(signUpPage(state, { next, client }), { headers: cookieHeaders(state.setCookies) });
}

export const minutes = (seconds: number) => `${Math.ceil(seconds / 60)} minute(s)`;

export async function submitSignUp(ctx: AuthContext, request: Request, source: string): Promise<Response> {
  const form = await readForm(ctx, request);
  if ("refused" in form) return form.refused;
  const { params, state } = form;
  const fields = {
    email: params.get("email") ?? "",
    name: params.get("name") ?? "",
    password: params.get("password") ?? "",
  };
  const next = safeNext(params.get("next"), ctx.config.baseUrl);
  const shown = { next, client: await pendingClient(ctx, next, source), email: fields.email, name: fields.name };
  const wait = await ctx.throttles.signUpSource.take(source);
  if (wait > 0) {
    ctx.logger.warn("sign-up throttled");
    const error = `Too many sign-ups from your network. Try again in ${minutes(wait)}.`;
    return htmlResponse(signUpPage(state, { ...shown, error }), {
      status: 429,
      headers: { "Retry-After": String(wait) },
    });
  }
  try {
    const user = await createUser(ctx, fields);
    // The account exists either way; when the mail could not go out, a page says so and offers to resend.
    const sent = await sendVerification(ctx, user);
    const to = sent.ok ? next : `/verify-email?${new URLSearchParams({ unsent: "1", next })}`;
    return redirect(to, cookieHeaders([await startSession(ctx, user.id, state)]));
  } catch (error) {
    if (!(error instanceof AuthInputError)) throw error;
    const shownError = error.kind === "email_taken" ? emailTakenError(next, fields.email.trim()) : error.message;
    return htmlResponse(signUpPage(state, { ...shown, error: shownError }), { status: 400 });
  }
}

export async function showSignIn(ctx: AuthContext, request: Request, source: string): Promise<Response> {
  const state = await readBrowserState(ctx, request);
  const url = new URL(request.url);
  const next = nextOf(ctx, request);
  if (state.user) return redirect(next);
  const email = url.searchParams.get("email")?.slice(0, 320) ?? undefined;
  const client = await pendingClient(ctx, next, source);
  return htmlResponse(signInPage(state, { next, client, email }), { headers: cookieHeaders(state.setCookies) });
}

/**
 * Wrong passwords never lock anyone out: every attempt is checked, held first for a delay that grows with the
 * failures on its email, its email from its address and its address (see throttle.ts). The right password always
 * signs in; an attacker only gets slower. Someone who forgot the password resets it by email (password-reset.ts).
 */
export async function submitSignIn(ctx: AuthContext, request: Request, source: string): Promise<Response> {
  const form = await readForm(ctx, request);
  if ("refused" in form) return form.refused;
  const { params, state } = form;
  const email = (params.get("email") ?? "").trim();
  const next = safeNext(params.get("next"), ctx.config.baseUrl);
  const client = await pendingClient(ctx, next, source);
  const problem = formEmailProblem(email);
  if (problem) return htmlResponse(signInPage(state, { next, client, email, error: problem }), { status: 400 });
  const key = email.toLowerCase();
  const delay = await ctx.throttles.signInAttempt(key, source);
  if (delay > 0) {
    ctx.logger.info("sign-in held", { delayMs: delay });
    await ctx.sleep(delay);
  }
  const user = await checkPassword(ctx, email, params.get("password") ?? "");
  if (!user) {
    ctx.logger.info("sign-in refused");
    const error = "Email or password is wrong. Forgot your password? Reset it by email below.";
    return htmlResponse(signInPage(state, { next, client, email, error }), { status: 401 });
  }
  await ctx.throttles.signInSucceeded(key, source);
  return redirect(next, cookieHeaders([await startSession(ctx, user.id, state)]));
}

export async function submitSignOut(ctx: AuthContext, request: Request): Promise<Response> {
  const form = await readForm(ctx, request);
  if ("refused" in form) return form.refused;
  return redirect("/", cookieHeaders([await endSession(ctx, form.state)]));
}

const TOKENS = "/dashboard/tokens";
const signInToTokens = (state: BrowserState) => signInRedirect(TOKENS, state.setCookies);

/** `GET /dashboard/tokens[?revoked=<grant>]`: the connected clients; after a revoke, a line saying it is done. */
export async function showTokens(ctx: AuthContext, request: Request): Promise<Response> {
  const state = await readBrowserState(ctx, request);
  if (!state.user) return signInToTokens(state);
  const clients = await listConnectedClients(ctx, state.user.id);
  const revokedId = new URL(request.url).searchParams.get("revoked");
  const revoked = revokedId ? await findGrant(ctx, revokedId) : null;
  const notice =
    revoked && revoked.userId === state.user.id && revoked.revoked
      ? `${revoked.clientName} is revoked: its next call is refused, and it can connect again only if you approve it again.`
      : undefined;
  return htmlResponse(tokensPage({ ...state, user: state.user }, clients, notice), {
    headers: cookieHeaders(state.setCookies),
  });
}

/** `GET /dashboard/tokens/revoke?grant=<id>`: asks before revoking (a page of its own; no script needed). */
export async function showRevoke(ctx: AuthContext, request: Request): Promise<Response> {
  const state = await readBrowserState(ctx, request);
  if (!state.user) return signInToTokens(state);
  const grantId = new URL(request.url).searchParams.get("grant") ?? "";
  const client = (await listConnectedClients(ctx, state.user.id)).find((c) => c.grantId === grantId);
  // Unknown, someone else's or already revoked: back to the list, which shows what is connected.
  if (!client) return redirect(TOKENS, cookieHeaders(state.setCookies));
  return htmlResponse(revokePage({ ...state, user: state.user }, client), {
    headers: cookieHeaders(state.setCookies),
  });
}

export async function submitRevoke(ctx: AuthContext, request: Request): Promise<Response> {
  const form = await readForm(ctx, request);
  if ("refused" in form) return form.refused;
  const { params, state } = form;
  if (!state.user) return signInToTokens(state);
  const grant = await findGrant(ctx, params.get("grant_id") ?? "");
  // Someone else's grant id looks exactly like an unknown one: no hint that it exists.
  if (!grant || grant.userId !== state.user.id) return redirect(TOKENS);
  await ctx.revokeGrant(grant.grantId, "user");
  return redirect(`${TOKENS}?${new URLSearchParams({ revoked: grant.grantId })}`);
}

export async function showLanding(ctx: AuthContext, request: Request): Promise<Response> {
  const state = await readBrowserState(ctx, request);
  return htmlResponse(landingPage(state, ctx.config.mcpUrl), { headers: cookieHeaders(state.setCookies) });
}
