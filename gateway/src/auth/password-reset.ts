import { isToolError, openPayload, plural, signPayload } from "@hatch/contracts";
import { and, eq, isNull } from "drizzle-orm";
import { z } from "zod";
import { grants, users } from "../db/schema.ts";
import { csrfField, html, htmlResponse, renderPage, withNext, type SafeHtml } from "../pages/layout.ts";
import { minutes } from "./account-pages.ts";
import { cookieHeaders, readForm } from "./forms.ts";
import type { AuthContext } from "./context.ts";
import { sha256Hex } from "./crypto.ts";
import { localPath, safeNext } from "./http.ts";
import { endUserSessions, readBrowserState, startSession, type BrowserState } from "./sessions.ts";
import { hashPassword } from "./passwords.ts";
import { findUserByEmail, formEmailProblem, passwordProblem, type PublicUser } from "./users.ts";
import { markEmailVerified } from "./verify-email.ts";

// "Forgot password": a signed link (user, a fingerprint of the current password hash, where to go next, expiry)
// mailed by orgs. Nothing is stored: setting the new password changes the hash, so every link made before stops
// working (one use), and so does a link older than an hour. A reset ends every session and connection of the user.

export const RESET_TTL_SECONDS = 3600;
const MAX_NEXT = 1024;

const TokenSchema = z.object({
  typ: z.literal("password-reset"),
  sub: z.string(),
  ph: z.string(),
  next: z.string(),
  exp: z.number(),
});

const fingerprint = (passwordHash: string) => sha256Hex(passwordHash).slice(0, 32);

export function resetToken(ctx: AuthContext, user: { id: string; passwordHash: string }, next: string): string {
  const exp = Math.floor(ctx.now() / 1000) + RESET_TTL_SECONDS;
  const kept = next.length <= MAX_NEXT ? next : "/";
  return signPayload(
    { typ: "password-reset", sub: user.id, ph: fingerprint(user.passwordHash), next: kept, exp },
    ctx.passwordResetKey,
  );
}

type Opened =
  | { ok: true; user: typeof users.$inferSelect; next: string }
  | { ok: false; status: number; title: string; message: string };

async function openToken(ctx: AuthContext, token: string): Promise<Opened> {
  const claims = TokenSchema.safeParse(openPayload(token, ctx.passwordResetKey));
  const invalid: Opened = {
    ok: false,
    status: 400,
    title: "Link not valid",
    message:
      "This password reset link is not valid. Open the newest link from the mail exactly as it is, or ask for a new one.",
  };
  if (!claims.success) return invalid;
  if (claims.data.exp * 1000 < ctx.now())
    return {
      ok: false,
      status: 410,
      title: "Link expired",
      message: "This password reset link expired (links work for 1 hour). Ask for a new one.",
    };
  const [user] = await ctx.db.select().from(users).where(eq(users.id, claims.data.sub)).limit(1);
  if (!user) return invalid;
  if (fingerprint(user.passwordHash) !== claims.data.ph)
    return {
      ok: false,
      status: 410,
      title: "Link already used",
      message:
        "The password was changed after this link was sent, so the link no longer works (each link works once). Sign in with the new password, or ask for a new link.",
    };
  return { ok: true, user, next: localPath(claims.data.next, ctx.config.baseUrl) ?? "/" };
}

function page(
  state: BrowserState,
  title: string,
  body: SafeHtml,
  status = 200,
  next?: string,
  retryAfter?: number,
): Response {
  const user = state.user ? { email: state.user.email, csrfToken: state.csrfToken } : null;
  const headers = cookieHeaders(state.setCookies);
  if (retryAfter) headers.push(["Retry-After", String(retryAfter)]);
  return htmlResponse(renderPage({ title, user, body, next }), { status, headers });
}

function forgotForm(state: BrowserState, next: string, email = "", error?: string): SafeHtml {
  const problem = error ? html`<p class="error" role="alert">${error}</p>` : "";
  return html`<h1>Reset your password</h1>${problem}
<p>Type the email of your Hatch account. If an account uses it, Hatch mails it a link to choose a new password.
The link works once, for 1 hour. Setting a new password signs out every browser and disconnects every AI client of
the account.</p>
<form class="stack" method="post" action="/forgot-password">${csrfField(state.csrfToken)}<input type="hidden" name="next" value="${next}">
<label>Email <input type="email" name="email" autocomplete="email" required value="${email}"></label>
<button type="submit">Mail me a reset link</button></form>
<p class="muted">Remembered it? <a href="${withNext("/signin", next)}">Sign in</a></p>`;
}

/** `GET /forgot-password`: the form asking for the account's email. */
export async function showForgot(ctx: AuthContext, request: Request): Promise<Response> {
  const state = await readBrowserState(ctx, request);
  const next = safeNext(new URL(request.url).searchParams.get("next"), ctx.config.baseUrl);
  return page(state, "Reset your password", forgotForm(state, next), 200, next);
}

type Sent = { ok: true; delivery: "smtp" | "outbox" | "none" } | { ok: false; status: number; message: string };

async function mailLink(ctx: AuthContext, email: string, next: string): Promise<Sent> {
  const row = await findUserByEmail(ctx, email);
  // An unknown email gets the same answer as a known one; nothing is mailed.
  if (!row) return { ok: true, delivery: "none" };
  const unsent = {
    ok: false,
    status: 503,
    message: "The mail could not be sent yet (the mail service is not answering). Try again in a minute.",
  } as const;
  if (!ctx.sendPasswordResetMail) return unsent;
  const user: PublicUser = {
    id: row.id,
    email: row.email,
    name: row.name,
    emailVerified: row.emailVerifiedAt !== null,
  };
  try {
    return { ok: true, delivery: await ctx.sendPasswordResetMail(user, resetToken(ctx, row, next)) };
  } catch (error) {
    if (isToolError(error) && error.code === "limit_exceeded")
      return { ok: false, status: 429, message: error.message };
    ctx.logger.warn("password reset mail not sent", { userId: row.id, error });
    return unsent;
  }
}

/** `POST /forgot-password`: mails a reset link when the email has an account; the same answer when not. */
export async function submitForgot(ctx: AuthContext, request: Request, source: string): Promise<Response> {
  const form = await readForm(ctx, request);
  if ("refused" in form) return form.refused;
  const { params, state } = form;
  const email = (params.get("email") ?? "").trim();
  const next = safeNext(params.get("next"), ctx.config.baseUrl);
  const problem = formEmailProblem(email);
  if (problem) return page(state, "Reset your password", forgotForm(state, next, email, problem), 400, next);
  const wait = await ctx.throttles.resetSource.take(source);
  if (wait > 0) {
    const error = `Too many reset requests from your network. Try again in ${minutes(wait)}.`;
    return page(state, "Reset your password", forgotForm(state, next, email, error), 429, next, wait);
  }
  const sent = await mailLink(ctx, email, next);
  if (!sent.ok) return page(state, "Not sent", forgotForm(state, next, email, sent.message), sent.status, next);
  ctx.logger.info("password reset asked", { mailed: sent.delivery !== "none" });
  const outbox = ctx.config.devPages
    ? html` No mail server is configured here: read it on the <a href="/dev/outbox">dev outbox</a>.`
    : "";
  const body = html`<h1>Check your inbox</h1><p>If an account uses <strong>${email}</strong>, a link to reset its password
is on its way. It works once, for 1 hour.${outbox}</p><p><a href="${withNext("/signin", next)}">Back to sign in</a></p>`;
  return page(state, "Check your inbox", body, 200, next);
}

function newPasswordForm(state: BrowserState, token: string, email: string, error?: string): SafeHtml {
  const problem = error ? html`<p class="error" role="alert">${error}</p>` : "";
  return html`<h1>Choose a new password</h1>${problem}<p>For <strong>${email}</strong>. Saving it signs out every browser
and disconnects every AI client of the account; connect them again afterwards.</p>
<form class="stack" method="post" action="/reset-password">${csrfField(state.csrfToken)}<input type="hidden" name="token" value="${token}">
<label>New password <input type="password" name="password" autocomplete="new-password" required minlength="8"></label>
<button type="submit">Save the new password</button></form>`;
}

function refused(state: BrowserState, opened: Extract<Opened, { ok: false }>): Response {
  const body = html`<h1>${opened.title}</h1><p class="error" role="alert">${opened.message}</p>
<p><a href="/forgot-password">Ask for a new link</a> · <a href="/signin">Sign in</a></p>`;
  return page(state, opened.title, body, opened.status);
}

/** `GET /reset-password?token=…` (the mailed link): the new password form while the link is good. */
export async function showReset(ctx: AuthContext, request: Request): Promise<Response> {
  const state = await readBrowserState(ctx, request);
  const token = new URL(request.url).searchParams.get("token") ?? "";
  const opened = await openToken(ctx, token);
  if (!opened.ok) return refused(state, opened);
  return page(state, "Choose a new password", newPasswordForm(state, token, opened.user.email));
}

/**
 * `POST /reset-password`: sets the new password once (the update only applies over the hash the link was made
 * for), then ends every session and grant of the user and signs this browser in. The link proved the inbox.
 */
export async function submitReset(ctx: AuthContext, request: Request): Promise<Response> {
  const form = await readForm(ctx, request);
  if ("refused" in form) return form.refused;
  const { params, state } = form;
  const token = params.get("token") ?? "";
  const opened = await openToken(ctx, token);
  if (!opened.ok) return refused(state, opened);
  const { user, next } = opened;
  const password = params.get("password") ?? "";
  const weak = passwordProblem(password);
  if (weak) return page(state, "Choose a new password", newPasswordForm(state, token, user.email, weak), 400);
  const passwordHash = await hashPassword(password, ctx.config.passwordCost);
  const changed = await ctx.db
    .update(users)
    .set({ passwordHash })
    .where(and(eq(users.id, user.id), eq(users.passwordHash, user.passwordHash)))
    .returning({ id: users.id });
  if (changed.length === 0) return refused(state, (await openToken(ctx, token)) as Extract<Opened, { ok: false }>);
  const live = await ctx.db
    .select({ id: grants.id })
    .from(grants)
    .where(and(eq(grants.userId, user.id), isNull(grants.revokedAt)));
  for (const { id } of live) await ctx.revokeGrant(id, "password_reset");
  const sessions = await endUserSessions(ctx, user.id);
  await markEmailVerified(ctx, user.id, user.email);
  ctx.logger.info("password reset", { userId: user.id, grantsRevoked: live.length, sessionsEnded: sessions });
  const cookie = await startSession(ctx, user.id, state);
  const clients = live.length
    ? `${plural(live.length, "AI client connection")} ${live.length === 1 ? "was" : "were"} disconnected: connect them again from the AI client.`
    : "No AI client was connected.";
  const body = html`<h1>Password changed</h1><p role="status">You are signed in as <strong>${user.email}</strong> with the new
password. Every other browser was signed out. ${clients}</p><p><a class="button" href="${next}">Continue</a></p>`;
  return htmlResponse(renderPage({ title: "Password changed", user: null, body }), {
    headers: cookieHeaders([...state.setCookies, cookie]),
  });
}
