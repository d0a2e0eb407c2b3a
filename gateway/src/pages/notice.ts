import { openPayload, signPayload } from "@hatch/contracts";
import { parseCookies, serializeCookie } from "../auth/http.ts";

// Post/redirect/get for the dashboard's forms (its actions, a secret's value, an AI key): a form that worked answers
// 303 to its page, and that page shows what happened once; a reload does not send the form (or a secret in it) again.
// The words travel in a short-lived cookie, signed (an app on a sibling subdomain could set a cookie for this host, so
// an unsigned one could put words on the dashboard) and bound to the person and the page they are for.

const NAME = "hatch_notice";
const MAX_AGE_SECONDS = 60;
/** Far under a browser's 4 KB per cookie once signed and encoded; tool texts are a few hundred characters. */
const MAX_TEXT = 1_000;

export interface NoticeCookies {
  /** Set-Cookie for a notice `userId` sees on `page` (path and query, as the redirect names it). */
  set(userId: string, page: string, text: string): string;
  /** The words this request's page has for `userId`, and the Set-Cookie that clears them (null when none). */
  take(request: Request, userId: string): { text: string | null; clear: string | null };
}

export function noticeCookies(key: Buffer, secure: boolean): NoticeCookies {
  return {
    set(userId, page, text) {
      const payload = { u: userId, p: page, t: text.slice(0, MAX_TEXT), x: Date.now() + MAX_AGE_SECONDS * 1000 };
      const value = signPayload(payload, key);
      return serializeCookie(NAME, value, { secure, maxAgeSeconds: MAX_AGE_SECONDS });
    },
    take(request, userId) {
      const raw = parseCookies(request.headers.get("cookie")).get(NAME);
      if (raw === undefined) return { text: null, clear: null };
      const payload = openPayload(raw, key) as { u?: unknown; p?: unknown; t?: unknown; x?: unknown } | null;
      const url = new URL(request.url);
      // Another page's words wait for it (a second tab); anything else is dropped.
      if (payload && payload.p !== url.pathname + url.search && payload.u === userId)
        return { text: null, clear: null };
      const clear = serializeCookie(NAME, "", { secure, maxAgeSeconds: 0 });
      const fresh = typeof payload?.x === "number" && payload.x > Date.now();
      if (!payload || !fresh || payload.u !== userId || typeof payload.t !== "string") return { text: null, clear };
      return { text: payload.t, clear };
    },
  };
}
