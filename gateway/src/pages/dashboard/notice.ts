import { openPayload, signPayload } from "@hatch/shared";
import { parseCookies, serializeCookie } from "../../auth/http.ts";
import type { Notice } from "./views.ts";

// Post/redirect/get for the dashboard: a form that worked answers 303 to the page it came from, and that page shows
// what the tool said once. The words travel in a short-lived cookie, signed (an app on a sibling subdomain could set a
// cookie for this host, so an unsigned one could put words on the dashboard) and bound to the person it is for.

const NAME = "hatch_notice";
const MAX_AGE_SECONDS = 60;
/** Far under a browser's 4 KB per cookie once signed and encoded; tool texts are a few hundred characters. */
const MAX_TEXT = 1_000;

export interface NoticeCookies {
  /** Set-Cookie for a notice `userId` sees on the next page. */
  set(userId: string, text: string): string;
  /** The notice this request carries for `userId`, and the Set-Cookie that clears it (null when there is none). */
  take(request: Request, userId: string): { notice: Notice; clear: string | null };
}

export function noticeCookies(key: Buffer, secure: boolean): NoticeCookies {
  return {
    set(userId, text) {
      const value = signPayload({ u: userId, t: text.slice(0, MAX_TEXT), x: Date.now() + MAX_AGE_SECONDS * 1000 }, key);
      return serializeCookie(NAME, value, { secure, maxAgeSeconds: MAX_AGE_SECONDS });
    },
    take(request, userId) {
      const raw = parseCookies(request.headers.get("cookie")).get(NAME);
      if (raw === undefined) return { notice: null, clear: null };
      const clear = serializeCookie(NAME, "", { secure, maxAgeSeconds: 0 });
      const payload = openPayload(raw, key) as { u?: unknown; t?: unknown; x?: unknown } | null;
      const fresh = typeof payload?.x === "number" && payload.x > Date.now();
      if (!payload || !fresh || payload.u !== userId || typeof payload.t !== "string") return { notice: null, clear };
      return { notice: { text: payload.t }, clear };
    },
  };
}
