import { previewAudience, verifyViewerTicket } from "@hatch/contracts";
import { appOrigin, previewOrigin } from "../config.ts";
import type { AppsContext } from "../context.ts";
import { confirmUses } from "../db/schema.ts";
import { previewCookieName, signInUrl, viewerCookie, viewerCookieName } from "../http/viewer.ts";
import { pages } from "./pages.ts";
import { sameOriginTarget } from "../http/paths.ts";

/** Marks a used ticket's nonce in confirm_uses (same table as confirm tokens, its own id space). */
const NONCE_PREFIX = "viewer-ticket:";

/**
 * `GET <app origin>/_hatch/auth?ticket=…&path=…`: the gateway sends a signed-in viewer here. The ticket must be for
 * this app, unexpired and unused; then the app's own cookie is set and the browser goes to `path` on this origin
 * (never anywhere else, whatever the query says). With `version`, the same on that version's preview origin: the
 * ticket must be for that preview, and the cookie set is the preview's own (host.ts answerPreview).
 */
export async function answerAuthReturn(
  ctx: AppsContext,
  url: URL,
  address: string,
  version?: number,
): Promise<Response> {
  const origin = version === undefined ? appOrigin(ctx.config, address) : previewOrigin(ctx.config, address, version);
  // The preview host was read from a label previewOrigin makes, so it has one; this only satisfies the type.
  if (origin === null) return pages.noApp(address);
  const audience = version === undefined ? address : previewAudience(address, version);
  const target = sameOriginTarget(url.searchParams.get("path"), origin);
  const retry = signInUrl(ctx.config.gatewayUrl, address, target.slice(origin.length), false, version);
  const ticket = url.searchParams.get("ticket");
  if (!ticket) return pages.badTicket("The sign-in link is incomplete.", retry);
  const check = verifyViewerTicket(ctx.keys.viewer, ticket, audience);
  if (!check.ok) {
    ctx.logger.info("viewer ticket refused", { address, reason: check.reason });
    const message =
      check.reason === "expired"
        ? "The sign-in link expired (it is valid for one minute)."
        : check.reason === "wrong_app"
          ? "This sign-in link was made for another app."
          : "This sign-in link is not valid.";
    return pages.badTicket(message, retry);
  }
  const { claims } = check;
  // Single use across every app host instance: the link travels in a URL and may be seen in history or logs.
  const fresh = await ctx.db
    .insert(confirmUses)
    .values({ id: `${NONCE_PREFIX}${claims.nonce}`, expiresAt: new Date(claims.exp * 1000) })
    .onConflictDoNothing()
    .returning({ id: confirmUses.id });
  if (fresh.length === 0) {
    ctx.logger.info("viewer ticket replayed", { address });
    return pages.badTicket("This sign-in link was already used.", retry);
  }
  const name = version === undefined ? viewerCookieName(ctx.config) : previewCookieName(ctx.config);
  const session = { sub: claims.sub, session: claims.session };
  const cookie = viewerCookie(ctx.keys.viewer, ctx.config, session, audience, Date.now(), name);
  return new Response(null, {
    status: 302,
    headers: { Location: target, "Set-Cookie": cookie, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer" },
  });
}
