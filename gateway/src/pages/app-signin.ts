import {
  acceptRequestId,
  AppAddressSchema,
  deriveKey,
  isToolError,
  rpcMethods,
  signViewerTicket,
  ViewerOriginSchema,
  type Bus,
  type Logger,
} from "@hatch/shared";
import { cookieHeaders, type Auth, type BrowserState } from "../auth/index.ts";
import { localPath, redirect } from "../auth/http.ts";
import type { GatewayConfig } from "../config.ts";
import type { AccountSessions } from "../mcp/accounts.ts";
import { csrfField, html, htmlResponse, renderPage } from "./layout.ts";
import { callServiceRpc, websiteCaller } from "../services.ts";

// Viewer sign-in for published apps. The app host sends a viewer of a non-public app here
// (`/apps/signin?app=<address>&path=<path>`); once signed in, the gateway hands the browser a one-minute ticket
// for that app and sends it to `<app origin>/_hatch/auth`, where the app host sets its own cookie. The origin
// comes from the apps service, never from the query, so this page cannot be turned into an open redirect. The
// ticket names this browser session (its id hash), so the app session ends with it (see viewer-check.ts).

export interface AppSignInDeps {
  config: GatewayConfig;
  auth: Auth;
  bus: Bus;
  contextKey: Buffer;
  accounts: AccountSessions;
  logger: Logger;
}

export interface AppSignIn {
  /** GET /apps/signin */
  show(request: Request): Promise<Response>;
  /** POST /apps/signin/switch: sign out here, then sign in again (as someone else) and come back. */
  switchAccount(request: Request): Promise<Response>;
}

interface Target {
  address: string;
  path: string;
}

/** The app and the path on it; a path that is not a plain same-origin path becomes `/`. */
function readTarget(get: (name: string) => string | null | undefined): Target | null {
  const address = AppAddressSchema.safeParse(get("app"));
  if (!address.success) return null;
  const path = get("path") ?? "/";
  // Resolved as the browser will on the app's origin (`/.//evil.com` is `//evil.com` there); the origin is a stand-in.
  const plain =
    path.startsWith("/") && path.length <= 2048 && !/[\0-\x1f\x7f]/.test(path)
      ? localPath(path, "https://app.invalid")
      : null;
  return { address: address.data, path: plain ?? "/" };
}

const selfUrl = (target: Target, extra: Record<string, string> = {}) =>
  `/apps/signin?${new URLSearchParams({ app: target.address, path: target.path, ...extra })}`;

export function createAppSignIn(deps: AppSignInDeps): AppSignIn {
  const viewerKey = deriveKey(deps.config.secret, "viewer-ticket");
  const log = deps.logger.child({ component: "app-signin" });

  function problem(state: BrowserState | null, status: number, title: string, message: string): Response {
    const user = state?.user ? { email: state.user.email, csrfToken: state.csrfToken } : null;
    return htmlResponse(
      renderPage({ title, user, body: html`<h1>${title}</h1><p class="error" role="alert">${message}</p>` }),
      { status },
    );
  }

  async function show(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const target = readTarget((name) => url.searchParams.get(name));
    const state = await deps.auth.pages.state(request);
    if (!target)
      return problem(
        state,
        400,
        "This link is broken",
        "The link to the app is incomplete. Open the app's address again.",
      );
    if (!state.user || !state.sessionHash)
      return redirect(`/signin?next=${encodeURIComponent(selfUrl(target))}`, cookieHeaders(state.setCookies));
    if (url.searchParams.get("switch") === "1")
      return htmlResponse(switchPage(state, state.user.email, target), { headers: cookieHeaders(state.setCookies) });
    const requestId = acceptRequestId(request.headers.get("x-request-id"));
    try {
      const { origin } = await callServiceRpc(
        deps,
        "apps",
        rpcMethods.apps.viewerOrigin,
        { address: target.address },
        ViewerOriginSchema,
        websiteCaller(state.user, { scope: "read", client: "browser", requestId }),
      );
      // The ticket names this browser session, not the account: the app host asks who it is on every request.
      const ticket = signViewerTicket(viewerKey, {
        sub: state.user.id,
        session: state.sessionHash,
        address: target.address,
      });
      log.info("viewer ticket issued", { rid: requestId, user: state.user.id, address: target.address });
      return redirect(
        `${origin}/_hatch/auth?${new URLSearchParams({ ticket, path: target.path })}`,
        cookieHeaders(state.setCookies),
      );
    } catch (error) {
      if (!isToolError(error)) throw error;
      log.warn("viewer sign-in failed", { rid: requestId, code: error.code });
      return problem(
        state,
        503,
        "Apps are not available right now",
        "Hatch could not reach its apps service. Wait a minute and open the app again.",
      );
    }
  }

  async function switchAccount(request: Request): Promise<Response> {
    const form = await deps.auth.pages.form(request);
    if ("refused" in form) return form.refused;
    const { params, state } = form;
    const target = readTarget((name) => params.get(name));
    if (!target)
      return problem(
        state,
        400,
        "This link is broken",
        "The link to the app is incomplete. Open the app's address again.",
      );
    const cleared = await deps.auth.pages.signOut(state);
    return redirect(`/signin?next=${encodeURIComponent(selfUrl(target))}`, [["Set-Cookie", cleared]]);
  }

  return {
    show: (request) => guarded(log, () => show(request)),
    switchAccount: (request) => guarded(log, () => switchAccount(request)),
  };
}

function switchPage(state: BrowserState, email: string, target: Target): string {
  return renderPage({
    title: "Use another account",
    user: { email, csrfToken: state.csrfToken },
    body: html`<h1>Use another account</h1>
<p>You are signed in to Hatch as <strong>${email}</strong>. To open <code>${target.address}</code> with another
account, sign out here and sign in again.</p>
<form method="post" action="/apps/signin/switch">${csrfField(state.csrfToken)}
<input type="hidden" name="app" value="${target.address}"><input type="hidden" name="path" value="${target.path}">
<div class="actions"><button type="submit">Sign out and use another account</button>
<a href="${selfUrl(target)}">Continue as ${email}</a></div></form>`,
  });
}

async function guarded(log: Logger, run: () => Promise<Response>): Promise<Response> {
  try {
    return await run();
  } catch (error) {
    log.error("app sign-in page failed", { error });
    return htmlResponse(
      renderPage({
        title: "Something went wrong",
        body: html`<h1>Something went wrong</h1><p>Something went wrong on our side. Try again.</p>`,
      }),
      { status: 500 },
    );
  }
}
