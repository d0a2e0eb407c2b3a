import { callRpc, type Bus, type Logger } from "@hatch/platform";
import {
  httpStatusOf,
  isToolError,
  placementText,
  rpcMethods,
  SECRET_VALUE_MAX_CHARS,
  SECRET_VALUE_MIN_CHARS,
  SecretPageInputSchema,
  SecretPageSchema,
  type ApiPlacement,
  type SecretPage,
} from "@hatch/contracts";
import { Elysia } from "elysia";
import { cookieHeaders, type Auth, type BrowserState } from "../auth/index.ts";
import { redirect, signInRedirect } from "../auth/http.ts";
import type { AccountSessions } from "../mcp/accounts.ts";
import { dashboardContext, readDashboardForm } from "./dashboard-context.ts";
import { switched, switcherAbove, type SwitcherView } from "./dashboard/account-choice.ts";
import { csrfField, html, htmlResponse, renderPage, type SafeHtml } from "./layout.ts";
import type { NoticeCookies } from "./notice.ts";

// `/dashboard/apps/<address>/secrets/<NAME>`: the one place a person types a secret's value (tool_secret links here).
// The page names the app, the secret, the APIs that use it and where each sends it (base url and the header or query
// parameter), and whether a value is set; it never shows a value, not even the one just typed. The value goes only
// where the page said when it was saved: after a publish points an API elsewhere, the page shows the old and the new
// destination and the person confirms the new one (nothing goes there until then). Both forms carry a digest of the
// destinations shown, so a publish after the page was opened saves nothing. Who may is checked by the apps service on
// the person's own signed context.

export interface SecretPagesDeps {
  auth: Pick<Auth, "pages">;
  bus: Bus;
  contextKey: Buffer;
  accounts: AccountSessions;
  logger: Logger;
  notices: NoticeCookies;
}

const SAVED = "Saved. Tell your AI the secret is set.";
const CONFIRMED = "Confirmed. The app's calls now send the secret to the destinations above. Tell your AI it is done.";

/** A form post larger than this is refused before it is read (the value itself is at most 8 KiB). */
export const SECRET_FORM_MAX_BYTES = 32 * 1024;
const MIN_VALUE = SECRET_VALUE_MIN_CHARS;
const MAX_VALUE = SECRET_VALUE_MAX_CHARS;

type Signed = BrowserState & { user: NonNullable<BrowserState["user"]> };

const pathOf = (address: string, name: string) =>
  `/dashboard/apps/${encodeURIComponent(address)}/secrets/${encodeURIComponent(name)}`;

function page(state: BrowserState & SwitcherView, title: string, body: SafeHtml, status = 200): Response {
  const user = state.user ? { email: state.user.email, csrfToken: state.csrfToken } : null;
  const above = switcherAbove(state);
  return htmlResponse(renderPage({ title, user, body, section: "apps", above }), {
    status,
    headers: cookieHeaders(state.setCookies),
  });
}

function problem(state: BrowserState, title: string, message: string, status: number): Response {
  return page(state, title, html`<h1>${title}</h1><p class="error" role="alert">${message}</p>`, status);
}

const when = (iso: string) => new Date(iso).toUTCString();

const where = (to: { url: string; in: ApiPlacement }) => html`<code>${to.url}</code>, in ${placementText(to.in)}`;

function destinations(secret: SecretPage): SafeHtml {
  if (!secret.apis.length)
    return html`<p class="muted">No API in the app's current version uses ${secret.name} yet. You can set it now; once a
published version declares an API with this secret, this page shows where it would go and asks you to confirm.</p>`;
  const items = secret.apis.map((api) => {
    if (!secret.isSet || api.confirmed) return html`<li>the API <strong>${api.name}</strong> (${where(api)})</li>`;
    const before = api.was
      ? html`It went to ${where(api.was)} when the value was last saved or confirmed.`
      : html`You have not confirmed it for this secret.`;
    return html`<li>the API <strong>${api.name}</strong> now goes to ${where(api)}. ${before} <strong>Nothing is sent
there until you confirm.</strong></li>`;
  });
  return html`<p>Used by:</p><ul>${items}</ul>`;
}

function secretPage(
  state: Signed,
  secret: SecretPage,
  notice: { saved?: string | null; error?: string } = {},
  status = 200,
): Response {
  const path = pathOf(secret.address, secret.name);
  const now = secret.isSet
    ? html`<p>A value is set (${when(secret.updatedAt ?? "")}, by ${secret.updatedBy}). Saving a new one replaces it.</p>`
    : html`<p>No value is set yet.</p>`;
  const saved = notice.saved ? html`<p class="card" role="status">${notice.saved}</p>` : "";
  const error = notice.error ? html`<p class="error" role="alert">${notice.error}</p>` : "";
  const shown = html`<input type="hidden" name="shown" value="${secret.shown}">`;
  const waiting = secret.isSet && secret.apis.some((api) => !api.confirmed);
  const confirm = waiting
    ? html`<form class="stack" method="post" action="${path}">${csrfField(state.csrfToken)}${shown}
<p>Confirm only if you trust the new destination with this secret.</p>
<div class="actions"><button type="submit" name="confirm" value="yes">Confirm new destination</button></div></form>`
    : "";
  const body = html`<h1>Secret ${secret.name}</h1>${saved}${error}
<div class="card"><p>App: <strong>${secret.appName}</strong> (${secret.address})</p>${destinations(secret)}${now}</div>${confirm}
<form class="stack" method="post" action="${path}">${csrfField(state.csrfToken)}${shown}
<label>Value of ${secret.name}<input type="password" name="value" autocomplete="off" spellcheck="false" required minlength="${MIN_VALUE}" maxlength="${MAX_VALUE}"></label>
<p class="muted">At least ${MIN_VALUE} characters. Hatch encrypts the value and adds it only to the app's calls to the
destinations above. Nobody can read it back, here or through your AI.</p>
<div class="actions"><button type="submit">Save</button></div></form>`;
  return page(state, `Secret ${secret.name} · ${secret.appName}`, body, status);
}

export function secretPages(deps: SecretPagesDeps) {
  const target = (params: { address: string; name: string }) =>
    SecretPageInputSchema.safeParse({ address: params.address, name: params.name });
  const signIn = (state: BrowserState, address: string, name: string) =>
    signInRedirect(pathOf(address, name), state.setCookies);
  const notFound = (state: BrowserState) =>
    problem(state, "Secret not found", "This secret page does not exist. Ask your AI for a new link.", 404);

  async function show(request: Request, params: { address: string; name: string }): Promise<Response> {
    const state = await deps.auth.pages.state(request);
    if (!state.user) return signIn(state, params.address, params.name);
    const input = target(params);
    if (!input.success) return notFound(state);
    // The dashboard's account switcher on this page too (a secret belongs to its app, whichever account is shown).
    const signed = await switched(deps, request, { ...state, user: state.user }, pathOf(params.address, params.name));
    const { text, clear } = deps.notices.take(request, signed.user.id);
    if (clear) signed.setCookies.push(clear);
    try {
      const { ctx, requestId } = await dashboardContext(deps, signed.user, "read");
      const secret = await callRpc(deps.bus, "apps", rpcMethods.apps.secretPage, input.data, SecretPageSchema, {
        ctx,
        requestId,
      });
      return secretPage(signed, secret, { saved: text });
    } catch (error) {
      return failure(state, error);
    }
  }

  async function save(request: Request, params: { address: string; name: string }): Promise<Response> {
    const form = await readDashboardForm(deps.auth, request, SECRET_FORM_MAX_BYTES);
    if ("refused" in form) return form.refused;
    const { params: fields, state } = form;
    if (!state.user) return signIn(state, params.address, params.name);
    const input = target(params);
    if (!input.success) return notFound(state);
    const path = pathOf(input.data.address, input.data.name);
    const signed = await switched(deps, request, { ...state, user: state.user }, path);
    const shown = fields.get("shown") ?? "";
    const confirming = fields.get("confirm") === "yes";
    // Pasted keys often carry a line break or spaces at either end; no API key has them.
    const value = (fields.get("value") ?? "").trim();
    const refusal = !shown
      ? "This form is out of date. Check where the secret goes and try again."
      : confirming
        ? null
        : !value
          ? "Type or paste the value first."
          : value.length < MIN_VALUE
            ? `The value is shorter than ${MIN_VALUE} characters. Paste the whole key.`
            : value.length > MAX_VALUE
              ? `The value is longer than ${MAX_VALUE} characters.`
              : null;
    const again = async (message: string, status: number) => {
      const { ctx, requestId } = await dashboardContext(deps, signed.user, "read");
      const secret = await callRpc(deps.bus, "apps", rpcMethods.apps.secretPage, input.data, SecretPageSchema, {
        ctx,
        requestId,
      });
      return secretPage(signed, secret, { error: message }, status);
    };
    try {
      if (refusal) return await again(refusal, 400);
      const { ctx, requestId } = await dashboardContext(deps, signed.user, "write");
      if (confirming) {
        await callRpc(deps.bus, "apps", rpcMethods.apps.secretConfirm, { ...input.data, shown }, SecretPageSchema, {
          ctx,
          requestId,
        });
      } else {
        await callRpc(deps.bus, "apps", rpcMethods.apps.secretSet, { ...input.data, value, shown }, SecretPageSchema, {
          ctx,
          requestId,
        });
      }
      // Back to the page (303): a reload shows it again rather than sending the value a second time.
      const done = confirming ? CONFIRMED : SAVED;
      return redirect(path, cookieHeaders([...state.setCookies, deps.notices.set(signed.user.id, path, done)]));
    } catch (error) {
      // A publish since the page was opened: the page again, with the destinations as they are now.
      if (isToolError(error) && error.code === "conflict") {
        try {
          return await again(error.message, 409);
        } catch (next) {
          return failure(state, next);
        }
      }
      return failure(state, error);
    }
  }

  /** The service's refusal as a message; anything unexpected is logged and hidden (no error carries the value). */
  function failure(state: BrowserState, error: unknown): Response {
    if (isToolError(error) && error.code !== "internal") {
      const status = httpStatusOf(error.code);
      return problem(state, "Could not open this secret", error.message, status);
    }
    deps.logger.error("secret page failed", { error });
    return problem(state, "Something went wrong", "Something went wrong on our side. Try again in a minute.", 500);
  }

  return new Elysia({ name: "hatch-secret-pages" })
    .get("/dashboard/apps/:address/secrets/:name", ({ request, params }) => show(request, params))
    .post("/dashboard/apps/:address/secrets/:name", ({ request, params }) => save(request, params), { parse: "none" });
}
