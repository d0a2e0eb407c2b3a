import { createHmac } from "node:crypto";
import { and, eq, gt, lt } from "drizzle-orm";
import { browserSessions, users } from "../db/schema.ts";
import type { AuthContext } from "./context.ts";
import { newSecret, safeEqual, sha256Hex } from "./crypto.ts";
import { parseCookies, serializeCookie } from "./http.ts";
import type { PublicUser } from "./users.ts";

const SESSION_SECONDS = 30 * 86_400;

/** `__Host-` cookies (Secure, no Domain) cannot be set by a sibling subdomain such as a published app. */
function cookieNames(ctx: AuthContext) {
  const prefix = ctx.config.secureCookies ? "__Host-" : "";
  return { session: `${prefix}hatch_session`, csrf: `${prefix}hatch_csrf` };
}

/** What a page handler knows about the browser: who is signed in, the CSRF token for its forms, cookies to set. */
export interface BrowserState {
  user: PublicUser | null;
  csrfToken: string;
  setCookies: string[];
  /** The cookies the request carried (a CSRF cookie minted for this response is not among them). */
  cookies: Map<string, string>;
  /**
   * The signed-in session's id hash (`browser_sessions.id_hash`), null when nobody is signed in: app viewer
   * tickets name it, so an app session ends with this one (never the session id itself).
   */
  sessionHash: string | null;
}

/**
 * Signed double-submit bound to the session: the form field is an HMAC of the CSRF cookie and the session id
 * ("anon" before sign-in). An attacker who can plant a cookie (from a sibling subdomain) cannot produce the field
 * without the server's key, and a field minted for one session (or before sign-in) fails in any other.
 */
function csrfTokenFor(ctx: AuthContext, cookieValue: string, sessionId: string | null): string {
  return createHmac("sha256", ctx.csrfKey)
    .update(`${cookieValue}:${sessionId ?? "anon"}`)
    .digest("base64url");
}

/** The session id the CSRF token is bound to: the cookie's, but only while it names a live session. */
function boundSession(ctx: AuthContext, cookies: Map<string, string>, user: PublicUser | null): string | null {
  return user ? (cookies.get(cookieNames(ctx).session) ?? null) : null;
}

export async function readBrowserState(ctx: AuthContext, request: Request): Promise<BrowserState> {
  const names = cookieNames(ctx);
  const cookies = parseCookies(request.headers.get("cookie"));
  const setCookies: string[] = [];
  let csrfCookie = cookies.get(names.csrf);
  if (!csrfCookie) {
    csrfCookie = newSecret();
    setCookies.push(serializeCookie(names.csrf, csrfCookie, { secure: ctx.config.secureCookies }));
  }
  const sessionId = cookies.get(names.session);
  const user = await sessionUser(ctx, sessionId);
  return {
    user,
    csrfToken: csrfTokenFor(ctx, csrfCookie, boundSession(ctx, cookies, user)),
    setCookies,
    cookies,
    sessionHash: user && sessionId ? sha256Hex(sessionId) : null,
  };
}

async function sessionUser(ctx: AuthContext, sessionId: string | undefined): Promise<PublicUser | null> {
  if (!sessionId) return null;
  const [row] = await ctx.db
    .select({ id: users.id, email: users.email, name: users.name, emailVerifiedAt: users.emailVerifiedAt })
    .from(browserSessions)
    .innerJoin(users, eq(users.id, browserSessions.userId))
    .where(and(eq(browserSessions.idHash, sha256Hex(sessionId)), gt(browserSessions.expiresAt, new Date(ctx.now()))))
    .limit(1);
  return row ? { id: row.id, email: row.email, name: row.name, emailVerified: row.emailVerifiedAt !== null } : null;
}

/**
 * A POSTed form is accepted only with a CSRF field bound to this CSRF cookie and this session, and, when the
 * browser named one, our own Origin. `Origin: null` (a sandboxed frame, a `data:` page, a cross-origin redirect)
 * is refused: our pages send `Referrer-Policy: same-origin`, so a browser posting our own form names our origin.
 * A missing Origin (older browsers) is left to the token.
 */
export function csrfValid(ctx: AuthContext, request: Request, state: BrowserState, field: string | undefined): boolean {
  const origin = request.headers.get("origin");
  if (origin !== null && origin !== new URL(ctx.config.baseUrl).origin) return false;
  const cookie = state.cookies.get(cookieNames(ctx).csrf);
  if (!cookie || !field) return false;
  return safeEqual(field, csrfTokenFor(ctx, cookie, boundSession(ctx, state.cookies, state.user)));
}

/**
 * Starts a fresh session (a new id on every sign-in, so a planted session id is never promoted). The browser's
 * previous session ends first, with its app sessions: a sign-in over someone else's never leaves theirs alive.
 */
export async function startSession(ctx: AuthContext, userId: string, previous: BrowserState): Promise<string> {
  await endSession(ctx, previous);
  const id = newSecret();
  const now = ctx.now();
  await ctx.db
    .delete(browserSessions)
    .where(and(eq(browserSessions.userId, userId), lt(browserSessions.expiresAt, new Date(now))));
  await ctx.db
    .insert(browserSessions)
    .values({ idHash: sha256Hex(id), userId, expiresAt: new Date(now + SESSION_SECONDS * 1000) });
  return serializeCookie(cookieNames(ctx).session, id, {
    secure: ctx.config.secureCookies,
    maxAgeSeconds: SESSION_SECONDS,
  });
}

export async function endSession(ctx: AuthContext, state: BrowserState): Promise<string> {
  const names = cookieNames(ctx);
  const id = state.cookies.get(names.session);
  if (id) {
    await ctx.db.delete(browserSessions).where(eq(browserSessions.idHash, sha256Hex(id)));
    // Every app session of this browser ends with it (app hosts drop what they cached about this session).
    await ctx.onSessionEnded?.(sha256Hex(id));
  }
  return serializeCookie(names.session, "", { secure: ctx.config.secureCookies, maxAgeSeconds: 0 });
}

/** Ends every browser session of the user (a password reset), with their app sessions; returns how many. */
export async function endUserSessions(ctx: AuthContext, userId: string): Promise<number> {
  const ended = await ctx.db
    .delete(browserSessions)
    .where(eq(browserSessions.userId, userId))
    .returning({ idHash: browserSessions.idHash });
  for (const { idHash } of ended) await ctx.onSessionEnded?.(idHash);
  return ended.length;
}
