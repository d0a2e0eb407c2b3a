import { htmlResponse } from "../pages/layout.ts";
import type { AuthContext } from "./context.ts";
import { readParams, type Params } from "./http.ts";
import { csrfValid, readBrowserState, type BrowserState } from "./sessions.ts";
import { errorPage } from "./views.ts";

// What every form page of auth does first (sign-in and sign-up, email verification, password reset): read the POSTed
// form with its browser state and check its CSRF token.

export const cookieHeaders = (cookies: string[]): [string, string][] => cookies.map((c) => ["Set-Cookie", c]);

function csrfRefused(state: BrowserState): Response {
  const message = "This form expired or came from another site. Go back, reload the page and try again.";
  return htmlResponse(errorPage(state, "Please try again", message), {
    status: 403,
    headers: cookieHeaders(state.setCookies),
  });
}

/** Reads a POSTed form with its browser state, or the refusal page when the CSRF check fails. */
export async function readForm(
  ctx: AuthContext,
  request: Request,
): Promise<{ params: Params; state: BrowserState } | { refused: Response }> {
  const params = await readParams(request, ctx.config.maxBodyBytes);
  const state = await readBrowserState(ctx, request);
  return csrfValid(ctx, request, state, params.get("csrf")) ? { params, state } : { refused: csrfRefused(state) };
}
