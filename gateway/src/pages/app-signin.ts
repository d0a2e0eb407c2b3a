import {
  acceptRequestId,
  AppAddressSchema,
  deriveKey,
  isToolError,
  previewAudience,
  rpcMethods,
  signViewerTicket,
  ViewerOriginSchema,
  type ViewerOrigin,
} from "@hatch/contracts";
import { type Bus, type Database, type Logger } from "@hatch/platform";
import { consentNeeded, hasConsent, recordConsent, type PublicApp } from "../app-consents.ts";
import { cookieHeaders, type Auth, type BrowserState } from "../auth/index.ts";
import { localPath, redirect, signInRedirect } from "../auth/http.ts";
import type { GatewayConfig } from "../config.ts";
import type { AccountSessions } from "../mcp/accounts.ts";
import { csrfField, html, htmlResponse, renderPage } from "./layout.ts";
import { callerSession, callServiceRpc, websiteCaller } from "../services.ts";

// Viewer sign-in for published apps. The app host sends a viewer of a non-public app here
// (`/apps/signin?app=<address>&path=<path>`); once signed in, the gateway hands the browser a one-minute ticket
// for that app and sends it to `<app origin>/_hatch/auth`, where the app host sets its own cookie. The origin
// comes from the apps service, never from the query, so this page cannot be turned into an open redirect. The
// ticket names this browser session (its id hash), so the app session ends with it (see viewer-check.ts).
//
// A public app that is neither the person's own nor their organization's asks first: the consent page names the app,
// its owner and what it learns (name, email), with Continue (a CSRF-checked form that records the yes, then the
// ticket) and Cancel (back to the app, not signed in). The yes is kept per person and app (app-consents.ts).

export interface AppSignInDeps {
  config: GatewayConfig;
  auth: Auth;
  bus: Bus;
  contextKey: Buffer;
  accounts: AccountSessions;
  db: Database;
  logger: Logger;
}

export interface AppSignIn {
  /** GET /apps/signin */
  show(request: Request): Promise<Response>;
  /** POST /apps/signin/switch: sign out here, then sign in again (as someone else) and come back. */
  switchAccount(request: Request): Promise<Response>;
  /** POST /apps/signin/consent: Continue on the consent page (records the yes, then signs in to the app). */
  consent(request: Request): Promise<Response>;
}

interface Target {
  address: string;
  path: string;
  /** A non-current version's preview (its own origin; the app host serves it to the owner only). */
  version?: number;
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
  const version = get("version");
  if (version != null && version !== "" && !/^[1-9]\d{0,8}$/.test(version)) return null;
  return { address: address.data, path: plain ?? "/", ...(version ? { version: Number(version) } : {}) };
}

/** The target's fields as query or form parameters. */
const targetParams = (target: Target): Record<string, string> => ({
  app: target.address,
  path: target.path,
  ...(target.version === undefined ? {} : { version: String(target.version) }),
});

const selfUrl = (target: Target, extra: Record<string, string> = {}) =>
  `/apps/signin?${new URLSearchParams({ ...targetParams(target), ...extra })}`;

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

  /** A link without a valid app address (or path): nothing to sign in to. */
  const brokenLink = (state: BrowserState | null) =>
    problem(state, 400, "This link is broken", "The link to the app is incomplete. Open the app's address again.");

  /** To the sign-in page, which comes back to this step for the same app and path. */
  const signInFirst = (state: BrowserState, target: Target) => signInRedirect(selfUrl(target), state.setCookies);

  async function show(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const target = readTarget((name) => url.searchParams.get(name));
    const state = await deps.auth.pages.state(request);
    if (!target) return brokenLink(state);
    if (!state.user || !state.sessionHash) return signInFirst(state, target);
    if (url.searchParams.get("switch") === "1")
      return htmlResponse(switchPage(state, state.user.email, target), { headers: cookieHeaders(state.setCookies) });
    const requestId = acceptRequestId(request.headers.get("x-request-id"));
    const signed = { ...state, user: state.user, sessionHash: state.sessionHash };
    const found = await lookup(signed, target, requestId);
    if (found instanceof Response) return found;
    const { origin, account, app } = found;
    if (app && consentNeeded(app, { sub: state.user.id, account }) && !(await hasHeld(state.user.id, app)))
      return htmlResponse(consentPage(signed, target, origin, app), { headers: cookieHeaders(state.setCookies) });
    return issue(signed, target, origin, requestId);
  }

  const hasHeld = (userId: string, app: PublicApp) => hasConsent(deps.db, userId, { id: app.id, owner: app.owner.id });

  /** Where the app is served, the account the person acts as, and (a public app) what the consent page names. */
  async function lookup(
    state: Signed,
    target: Target,
    requestId: string,
  ): Promise<{ origin: string; account: string; app: PublicApp | undefined } | Response> {
    const caller = websiteCaller(state.user, { scope: "read", client: "browser", requestId });
    try {
      const session = await callerSession(deps, caller);
      const answer: ViewerOrigin = await callServiceRpc(
        deps,
        "apps",
        rpcMethods.apps.viewerOrigin,
        target.version === undefined
          ? { address: target.address }
          : { address: target.address, version: target.version },
        ViewerOriginSchema,
        caller,
      );
      return { origin: answer.origin, account: session.account, app: answer.public };
    } catch (error) {
      if (!isToolError(error)) throw error;
      // A version whose preview has no address (apps answers not_found): the link was not one Hatch made.
      if (error.code === "not_found" && target.version !== undefined) return brokenLink(state);
      log.warn("viewer sign-in failed", { rid: requestId, code: error.code });
      return problem(
        state,
        503,
        "Apps are not available right now",
        "Hatch could not reach its apps service. Wait a minute and open the app again.",
      );
    }
  }

  /** The ticket for this browser session, on its way to the app's origin. */
  function issue(state: Signed, target: Target, origin: string, requestId: string): Response {
    // The ticket names this browser session, not the account: the app host asks who it is on every request.
    const ticket = signViewerTicket(viewerKey, {
      sub: state.user.id,
      session: state.sessionHash,
      address: target.version === undefined ? target.address : previewAudience(target.address, target.version),
    });
    log.info("viewer ticket issued", { rid: requestId, user: state.user.id, address: target.address });
    return redirect(
      `${origin}/_hatch/auth?${new URLSearchParams({ ticket, path: target.path })}`,
      cookieHeaders(state.setCookies),
    );
  }

  async function consent(request: Request): Promise<Response> {
    const form = await deps.auth.pages.form(request);
    if ("refused" in form) return form.refused;
    const { params, state } = form;
    const target = readTarget((name) => params.get(name));
    if (!target) return brokenLink(state);
    if (!state.user || !state.sessionHash) return signInFirst(state, target);
    const signed = { ...state, user: state.user, sessionHash: state.sessionHash };
    const requestId = acceptRequestId(request.headers.get("x-request-id"));
    const found = await lookup(signed, target, requestId);
    if (found instanceof Response) return found;
    const { origin, account, app } = found;
    if (app && consentNeeded(app, { sub: signed.user.id, account })) {
      // The page named an app and an owner: a yes counts for exactly those (the app may have changed hands since).
      if (params.get("appId") !== app.id || params.get("ownerId") !== app.owner.id)
        return htmlResponse(consentPage(signed, target, origin, app), { headers: cookieHeaders(state.setCookies) });
      await recordConsent(deps.db, signed.user.id, target.address, app);
      log.info("app consent given", { rid: requestId, user: signed.user.id, address: target.address });
    }
    return issue(signed, target, origin, requestId);
  }

  async function switchAccount(request: Request): Promise<Response> {
    const form = await deps.auth.pages.form(request);
    if ("refused" in form) return form.refused;
    const { params, state } = form;
    const target = readTarget((name) => params.get(name));
    if (!target) return brokenLink(state);
    const cleared = await deps.auth.pages.signOut(state);
    return signInRedirect(selfUrl(target), [cleared]);
  }

  return {
    show: (request) => guarded(log, () => show(request)),
    switchAccount: (request) => guarded(log, () => switchAccount(request)),
    consent: (request) => guarded(log, () => consent(request)),
  };
}

type Signed = BrowserState & { user: NonNullable<BrowserState["user"]>; sessionHash: string };

/**
 * Asked before a public app that is not the person's own or their organization's learns who they are. Cancel is a
 * plain link back to the app's page: nothing is recorded and the app sees nobody signed in.
 */
function consentPage(state: Signed, target: Target, origin: string, app: PublicApp): string {
  const name = app.name || target.address;
  const owner = app.owner.name || "someone else";
  return renderPage({
    title: `Let ${name} know who you are?`,
    user: { email: state.user.email, csrfToken: state.csrfToken },
    body: html`<h1>Let ${name} know who you are?</h1>
<div class="card"><p><strong>${name}</strong> at <code>${origin}</code> is an app made by <strong>${owner}</strong>, not by Hatch.</p>
<p>If you continue, it learns:</p>
<ul><li>your name: <strong>${state.user.name}</strong></li><li>your email: <strong>${state.user.email}</strong></li></ul>
<p>It can keep them and show them to ${owner}. You can take this back on your <a href="/dashboard">dashboard</a>; the app
keeps what it already stored.</p></div>
<form method="post" action="/apps/signin/consent">${csrfField(state.csrfToken)}
<input type="hidden" name="app" value="${target.address}"><input type="hidden" name="path" value="${target.path}">
<input type="hidden" name="appId" value="${app.id}"><input type="hidden" name="ownerId" value="${app.owner.id}">
<div class="actions"><button type="submit">Continue</button>
<a class="button secondary" href="${origin}${target.path}">Cancel</a></div></form>`,
  });
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
${target.version === undefined ? "" : html`<input type="hidden" name="version" value="${String(target.version)}">`}
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
