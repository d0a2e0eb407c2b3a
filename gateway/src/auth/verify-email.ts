import { isToolError, openPayload, signPayload } from "@hatch/contracts";
import { and, eq, isNull, sql } from "drizzle-orm";
import { z } from "zod";
import { users } from "../db/schema.ts";
import { csrfField, html, htmlResponse, renderPage, type SafeHtml } from "../pages/layout.ts";
import { cookieHeaders, readForm } from "./forms.ts";
import type { AuthContext } from "./context.ts";
import { redirect, safeNext, signInRedirect } from "./http.ts";
import { readBrowserState, type BrowserState } from "./sessions.ts";
import type { PublicUser } from "./users.ts";

// Email verification: a signed link (user id + email + expiry, purpose key "verify-email") mailed by orgs.
// Opening it proves the inbox; nothing is stored until then, and using it twice changes nothing.

export const VERIFY_EMAIL_TTL_SECONDS = 24 * 3600;

const TokenSchema = z.union([
  z.object({ typ: z.literal("verify-email"), sub: z.string(), email: z.string(), exp: z.number() }),
  // A new address the person asked for on the settings page: mailed to that address; opening it makes it theirs.
  z.object({ typ: z.literal("change-email"), sub: z.string(), from: z.string(), email: z.string(), exp: z.number() }),
]);

/** The link that moves the account from `from` to the new address `email` (mailed to the new address). */
export function emailChangeToken(ctx: AuthContext, user: { id: string; email: string }, email: string): string {
  const exp = Math.floor(ctx.now() / 1000) + VERIFY_EMAIL_TTL_SECONDS;
  return signPayload(
    { typ: "change-email", sub: user.id, from: user.email.toLowerCase(), email: email.toLowerCase(), exp },
    ctx.verifyEmailKey,
  );
}

function isUniqueViolation(error: unknown): boolean {
  for (let e: unknown = error; e && typeof e === "object"; e = (e as { cause?: unknown }).cause) {
    if ((e as { code?: unknown }).code === "23505") return true;
  }
  return false;
}

/**
 * Moves the account to the new address, verified (the link proved the inbox), while the account still has the address
 * the link was made from; "taken" when another account has the new one by now.
 */
async function changeEmail(
  ctx: AuthContext,
  claims: { sub: string; from: string; email: string },
): Promise<"changed" | "other_email" | "taken"> {
  try {
    const changed = await ctx.db
      .update(users)
      .set({ email: claims.email, emailVerifiedAt: new Date(ctx.now()) })
      .where(and(eq(users.id, claims.sub), eq(sql`lower(${users.email})`, claims.from)))
      .returning({ id: users.id });
    if (changed.length === 0) return "other_email";
  } catch (error) {
    if (isUniqueViolation(error)) return "taken";
    throw error;
  }
  ctx.forgetUser(claims.sub);
  await ctx.onUserChanged?.(claims.sub);
  ctx.logger.info("email changed", { userId: claims.sub });
  return "changed";
}

export function verificationToken(ctx: AuthContext, user: { id: string; email: string }): string {
  const exp = Math.floor(ctx.now() / 1000) + VERIFY_EMAIL_TTL_SECONDS;
  return signPayload({ typ: "verify-email", sub: user.id, email: user.email.toLowerCase(), exp }, ctx.verifyEmailKey);
}

/**
 * Marks `email` verified for the user, only while it is still the user's email. Returns false when it is not
 * (the address changed, or the user is gone). Cached grants of the user are dropped so their next call says so.
 */
export async function markEmailVerified(ctx: AuthContext, userId: string, email: string): Promise<boolean> {
  const sameEmail = and(eq(users.id, userId), eq(sql`lower(${users.email})`, email.toLowerCase()));
  const [row] = await ctx.db.select({ verifiedAt: users.emailVerifiedAt }).from(users).where(sameEmail).limit(1);
  if (!row) return false;
  if (row.verifiedAt) return true;
  await ctx.db
    .update(users)
    .set({ emailVerifiedAt: new Date(ctx.now()) })
    .where(and(sameEmail, isNull(users.emailVerifiedAt)));
  ctx.forgetUser(userId);
  // An app shared with this address opens for them from the next request on, not after a cache expires.
  await ctx.onUserChanged?.(userId);
  ctx.logger.info("email verified", { userId });
  return true;
}

type Outcome =
  | { kind: "verified"; email: string }
  | { kind: "changed"; email: string }
  | { kind: "taken" }
  | { kind: "other_email" }
  | { kind: "expired" }
  | { kind: "invalid" };

async function useToken(ctx: AuthContext, token: string): Promise<Outcome> {
  const claims = TokenSchema.safeParse(openPayload(token, ctx.verifyEmailKey));
  if (!claims.success) return { kind: "invalid" };
  if (claims.data.exp * 1000 < ctx.now()) return { kind: "expired" };
  if (claims.data.typ === "change-email") {
    const changed = await changeEmail(ctx, claims.data);
    return changed === "changed" ? { kind: "changed", email: claims.data.email } : { kind: changed };
  }
  const ok = await markEmailVerified(ctx, claims.data.sub, claims.data.email);
  return ok ? { kind: "verified", email: claims.data.email } : { kind: "other_email" };
}

export type SendOutcome = { ok: true; delivery: "smtp" | "outbox" } | { ok: false; message: string; status: number };

/** Asks orgs to mail the user a fresh link. Never throws: sign-up must succeed when mail cannot go out. */
export async function sendVerification(ctx: AuthContext, user: PublicUser): Promise<SendOutcome> {
  const unsent: SendOutcome = {
    ok: false,
    status: 503,
    message: "The verification mail could not be sent yet (the mail service is not answering). Try again in a minute.",
  };
  if (!ctx.sendVerificationMail) return unsent;
  try {
    return { ok: true, delivery: await ctx.sendVerificationMail(user, verificationToken(ctx, user)) };
  } catch (error) {
    if (isToolError(error) && error.code === "limit_exceeded")
      return { ok: false, status: 429, message: error.message };
    if (isToolError(error) && error.code === "unavailable")
      ctx.logger.warn("verification mail not sent", { userId: user.id, code: error.code });
    else ctx.logger.error("verification mail failed", { userId: user.id, error });
    return unsent;
  }
}

function page(state: BrowserState, title: string, body: SafeHtml, status = 200): Response {
  const user = state.user ? { email: state.user.email, csrfToken: state.csrfToken } : null;
  return htmlResponse(renderPage({ title, user, body }), { status, headers: cookieHeaders(state.setCookies) });
}

function resendForm(state: BrowserState, next: string): SafeHtml {
  return html`<form method="post" action="/verify-email/resend">${csrfField(state.csrfToken)}<input type="hidden" name="next" value="${next}">
<div class="actions"><button type="submit">Send the link again</button> <a href="${next}">Continue</a></div></form>`;
}

function whereMailIs(ctx: AuthContext, delivery: "smtp" | "outbox"): SafeHtml | string {
  if (delivery === "smtp") return "";
  return ctx.config.devPages
    ? html` No mail server is configured here: read it on the <a href="/dev/outbox">dev outbox</a>.`
    : " This Hatch cannot send mail yet, so it was kept, not sent: ask whoever runs it.";
}

const LIMITS = html`<p class="muted">Until then your account works with your own apps as usual; invitations to your email
and apps shared with it open once it is verified. An invitation link from a mail works at once.</p>`;

/** `GET /verify-email?token=…` (the mailed link), or without a token: where the signed-in user's verification stands. */
export async function showVerifyEmail(ctx: AuthContext, request: Request): Promise<Response> {
  const url = new URL(request.url);
  const state = await readBrowserState(ctx, request);
  const token = url.searchParams.get("token");
  const next = safeNext(url.searchParams.get("next"), ctx.config.baseUrl, "/");
  if (token !== null) {
    const outcome = await useToken(ctx, token);
    if (outcome.kind === "verified") {
      ctx.logger.info("verification link used");
      const body = html`<h1>Email verified</h1><p><strong>${outcome.email}</strong> is verified. Invitations sent to it and apps shared
with it now reach your account.</p><p><a href="/">Back to Hatch</a></p>`;
      return page(state, "Email verified", body);
    }
    if (outcome.kind === "changed") {
      ctx.logger.info("email change link used");
      const body = html`<h1>Email changed</h1><p>Your account's email is now <strong>${outcome.email}</strong>, verified. Sign in
with it from now on.</p><p><a href="/dashboard/settings">Back to your settings</a></p>`;
      return page(state, "Email changed", body);
    }
    const again =
      state.user && !state.user.emailVerified ? resendForm(state, next) : html`<p><a href="/">Back to Hatch</a></p>`;
    const [status, title, message] =
      outcome.kind === "expired"
        ? [410, "Link expired", "This verification link expired (links work for 24 hours). Sign in and send a new one."]
        : outcome.kind === "taken"
          ? [
              409,
              "Email already in use",
              "Another Hatch account has this email by now, so yours was not changed. Choose another address on your settings page.",
            ]
          : outcome.kind === "other_email"
            ? [
                409,
                "Link not for this email",
                "This verification link was made for an email address the account no longer has, so nothing was changed. Send a new link from your account.",
              ]
            : [
                400,
                "Link not valid",
                "This verification link is not valid. Open the newest link from the mail exactly as it is, or sign in and send a new one.",
              ];
    return page(state, title, html`<h1>${title}</h1><p class="error" role="alert">${message}</p>${again}`, status);
  }
  if (!state.user) return signInRedirect("/verify-email", state.setCookies);
  if (state.user.emailVerified) {
    return page(
      state,
      "Email verified",
      html`<h1>Email verified</h1><p><strong>${state.user.email}</strong> is verified.</p><p><a href="${next}">Continue</a></p>`,
    );
  }
  const unsent =
    url.searchParams.get("unsent") === "1"
      ? html`<p class="error" role="alert">Your account was created, but the verification mail could not be sent yet. Send it again in a minute.</p>`
      : html`<p>Open the link Hatch mailed to <strong>${state.user.email}</strong> to verify it.</p>`;
  return page(state, "Verify your email", html`<h1>Verify your email</h1>${unsent}${LIMITS}${resendForm(state, next)}`);
}

/** `POST /verify-email/resend`: mails the signed-in user a fresh link (orgs limits how many per hour). */
export async function submitResend(ctx: AuthContext, request: Request): Promise<Response> {
  const form = await readForm(ctx, request);
  if ("refused" in form) return form.refused;
  const { params, state } = form;
  if (!state.user) return signInRedirect("/verify-email");
  const next = safeNext(params.get("next"), ctx.config.baseUrl, "/");
  if (state.user.emailVerified) return redirect(`/verify-email?${new URLSearchParams({ next })}`);
  const sent = await sendVerification(ctx, state.user);
  if (!sent.ok) {
    return page(
      state,
      "Not sent",
      html`<h1>Not sent</h1><p class="error" role="alert">${sent.message}</p>${LIMITS}${resendForm(state, next)}`,
      sent.status,
    );
  }
  const body = html`<h1>Check your inbox</h1><p>A new verification link went to <strong>${state.user.email}</strong>.${whereMailIs(ctx, sent.delivery)}</p>
${LIMITS}<p><a href="${next}">Continue</a></p>`;
  return page(state, "Check your inbox", body);
}
