import { openPayload, signPayload, type ViewerIdentity, type ViewerSession } from "@hatch/contracts";
import { z } from "zod";
import type { AppsConfig } from "../config.ts";
import type { HostedApp } from "./site.ts";

// Who is looking at an app, and whether they may. The app host's own cookie, set by `/_hatch/auth` after the
// gateway vouched for the viewer with a ticket, is host-only on the app's origin: it never reaches the gateway or
// another app, and the gateway's session cookie never reaches an app. It names the Hatch browser session the viewer
// signed in with, not who they are: who they are now comes from the gateway on every request (viewers.ts).

/**
 * About an hour; after that the browser goes through the gateway again (a quick redirect when still signed in there).
 * The cookie ends sooner with the Hatch session it names (sign-out), whatever its age.
 */
export const VIEWER_COOKIE_SECONDS = 3_600;

const CookieClaimsSchema = z.object({
  /** 2: names a session (1 carried email and account; such cookies count as none and the viewer signs in again). */
  v: z.literal(2),
  /** Not a viewer ticket, though signed with the same key: neither is accepted in place of the other. */
  typ: z.literal("viewer-cookie"),
  sub: z.string().min(1),
  /** The gateway's browser session id hash (see shared viewer-ticket.ts). */
  session: z.string().min(1),
  address: z.string(),
  exp: z.number(),
});

/** Who is looking, as the gateway says now (never the cookie's copy). */
export type Viewer = ViewerIdentity;

/** `__Host-` on https: such a cookie cannot be planted by a sibling subdomain (another app) or scoped to the parent domain. */
export function viewerCookieName(config: Pick<AppsConfig, "appsProtocol">): string {
  return config.appsProtocol === "https:" ? "__Host-hatch_viewer" : "hatch_viewer";
}

/**
 * Hatch's own cookie names, kept from apps in both directions: the viewer cookie here, and the gateway's session,
 * CSRF and notice cookies (another site in production, but not always in development). Any case, with or without a
 * `__Secure-`/`__Host-` prefix: server code may neither set one nor read one.
 */
const HATCH_COOKIE_NAME = /^(?:__(?:secure|host)-)?hatch_/i;

export const isHatchCookieName = (name: string): boolean => HATCH_COOKIE_NAME.test(name);

/**
 * The name a browser gives the cookie of a Set-Cookie line (RFC 6265bis 5.6): the text before the first `=` of the
 * part before the first `;`, spaces and tabs trimmed. A nameless cookie (`=a=b`, or no `=` at all) is sent back as
 * its bare value, so what counts then is the name that value reads as.
 */
export function setCookieName(line: string): string {
  const pair = line.split(";", 1)[0] ?? "";
  const eq = pair.indexOf("=");
  const name = eq < 0 ? "" : trimWsp(pair.slice(0, eq));
  if (name) return name;
  const value = trimWsp(eq < 0 ? pair : pair.slice(eq + 1));
  const inner = value.indexOf("=");
  return trimWsp(inner < 0 ? value : value.slice(0, inner));
}

const trimWsp = (text: string) => text.replace(/^[ \t]+|[ \t]+$/g, "");

/** A version preview's own cookie (host-only on the preview origin), bound to `previewAudience(address, version)`. */
export function previewCookieName(config: Pick<AppsConfig, "appsProtocol">): string {
  return config.appsProtocol === "https:" ? "__Host-hatch_preview" : "hatch_preview";
}

export function viewerCookie(
  key: Buffer,
  config: Pick<AppsConfig, "appsProtocol">,
  viewer: ViewerSession,
  address: string,
  nowMs = Date.now(),
  name = viewerCookieName(config),
): string {
  const claims = {
    v: 2,
    typ: "viewer-cookie",
    sub: viewer.sub,
    session: viewer.session,
    address,
    exp: Math.floor(nowMs / 1000) + VIEWER_COOKIE_SECONDS,
  };
  return cookieLine(config, `${name}=${signPayload(claims, key)}`, VIEWER_COOKIE_SECONDS);
}

/** Removes the viewer cookie (its session ended): the next visit goes through sign-in without asking the gateway first. */
export function clearedViewerCookie(config: Pick<AppsConfig, "appsProtocol">, name = viewerCookieName(config)): string {
  return cookieLine(config, `${name}=`, 0);
}

function cookieLine(config: Pick<AppsConfig, "appsProtocol">, pair: string, maxAge: number): string {
  const parts = [pair, "Path=/", "HttpOnly", "SameSite=Lax", `Max-Age=${maxAge}`];
  if (config.appsProtocol === "https:") parts.push("Secure");
  return parts.join("; ");
}

/** The session this app's cookie names; null when absent, forged, expired or for another app. Not yet checked live. */
export function readViewerSession(
  request: Request,
  key: Buffer,
  name: string,
  address: string,
  nowMs = Date.now(),
): ViewerSession | null {
  const value = cookieValue(request.headers.get("cookie"), name);
  if (!value) return null;
  const claims = CookieClaimsSchema.safeParse(openPayload(value, key));
  if (!claims.success || claims.data.address !== address || claims.data.exp * 1000 < nowMs) return null;
  return { sub: claims.data.sub, session: claims.data.session };
}

/**
 * The visibility rule, checked on every request with the gateway's live answer: `public` anyone; otherwise a
 * signed-in viewer who is the owner, or (`org`) acts as the account the app belongs to, or (`people`) has a
 * verified email the app is shared with (an unverified sign-up must not claim someone else's address).
 */
export function canView(app: HostedApp, viewer: Viewer | null): boolean {
  if (app.visibility === "public") return true;
  if (!viewer) return false;
  if (viewer.sub === app.ownerId) return true;
  switch (app.visibility) {
    case "private":
      return false;
    case "org":
      return viewer.account === app.accountId;
    case "people":
      return viewer.emailVerified === true && app.people.has(viewer.email.toLowerCase());
  }
}

/**
 * Whether an app sees who this viewer is only after they agreed (the consent page of the gateway's /apps/signin): a
 * public app that is neither the viewer's own nor their organization's. Anyone can open a public app, so its owner
 * never chose this person; a non-public app's viewers are people its owner chose (by email or organization).
 */
export function needsConsent(app: HostedApp, viewer: Viewer): boolean {
  return app.visibility === "public" && viewer.sub !== app.ownerId && viewer.account !== app.accountId;
}

/** The gateway page that signs a viewer in and sends them back with a ticket (to a version's preview with `version`). */
export function signInUrl(
  gatewayUrl: string,
  address: string,
  path: string,
  switchUser = false,
  version?: number,
): string {
  const query = new URLSearchParams({ app: address, path });
  if (version !== undefined) query.set("version", String(version));
  if (switchUser) query.set("switch", "1");
  return `${gatewayUrl}/apps/signin?${query}`;
}

function cookieValue(header: string | null, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}
