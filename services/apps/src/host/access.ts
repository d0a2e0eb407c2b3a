import { openPayload, signPayload, type ViewerIdentity } from "@hatch/shared";
import { z } from "zod";
import type { AppsConfig } from "../config.ts";
import type { HostedApp } from "./site.ts";

// Who is looking at an app, and whether they may. The app host's own cookie, set by `/_hatch/auth` after the
// gateway vouched for the viewer with a ticket, is host-only on the app's origin: it never reaches the gateway or
// another app, and the gateway's session cookie never reaches an app.

/** About an hour; after that the browser goes through the gateway again (a quick redirect when still signed in there). */
export const VIEWER_COOKIE_SECONDS = 3_600;

const CookieClaimsSchema = z.object({
  v: z.literal(1),
  /** Not a viewer ticket, though signed with the same key: neither is accepted in place of the other. */
  typ: z.literal("viewer-cookie"),
  sub: z.string(),
  email: z.string(),
  account: z.string(),
  address: z.string(),
  exp: z.number(),
});

export type Viewer = ViewerIdentity;

/** `__Host-` on https: such a cookie cannot be planted by a sibling subdomain (another app) or scoped to the parent domain. */
export function viewerCookieName(config: Pick<AppsConfig, "appsProtocol">): string {
  return config.appsProtocol === "https:" ? "__Host-hatch_viewer" : "hatch_viewer";
}

export function viewerCookie(key: Buffer, config: Pick<AppsConfig, "appsProtocol">, viewer: Viewer, address: string, nowMs = Date.now()): string {
  const claims = { v: 1, typ: "viewer-cookie", sub: viewer.sub, email: viewer.email, account: viewer.account, address, exp: Math.floor(nowMs / 1000) + VIEWER_COOKIE_SECONDS };
  const parts = [`${viewerCookieName(config)}=${signPayload(claims, key)}`, "Path=/", "HttpOnly", "SameSite=Lax", `Max-Age=${VIEWER_COOKIE_SECONDS}`];
  if (config.appsProtocol === "https:") parts.push("Secure");
  return parts.join("; ");
}

/** The signed-in viewer of this app from the request's cookie; null when absent, forged, expired or for another app. */
export function readViewer(request: Request, key: Buffer, name: string, address: string, nowMs = Date.now()): Viewer | null {
  const value = cookieValue(request.headers.get("cookie"), name);
  if (!value) return null;
  const claims = CookieClaimsSchema.safeParse(openPayload(value, key));
  if (!claims.success || claims.data.address !== address || claims.data.exp * 1000 < nowMs) return null;
  return { sub: claims.data.sub, email: claims.data.email, account: claims.data.account };
}

/**
 * The visibility rule, checked on every request: `public` anyone; otherwise a signed-in viewer who is the owner,
 * or (`org`) acts as the account the app belongs to, or (`people`) has an email the app is shared with.
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
      return app.people.has(viewer.email.toLowerCase());
  }
}

/** The gateway page that signs a viewer in and sends them back with a ticket. */
export function signInUrl(gatewayUrl: string, address: string, path: string, switchUser = false): string {
  const query = new URLSearchParams({ app: address, path });
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
