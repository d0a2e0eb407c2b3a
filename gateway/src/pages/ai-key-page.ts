import {
  AI_KEY_SCOPES,
  AI_PROVIDER_NAME,
  AiKeyPageSchema,
  httpStatusOf,
  isToolError,
  rpcMethods,
  type AiKeyPage,
  type AiKeyScope,
} from "@hatch/contracts";
import { callRpc, type Bus, type Logger } from "@hatch/platform";
import { Elysia } from "elysia";
import { cookieHeaders, type Auth, type BrowserState, type PublicUser } from "../auth/index.ts";
import { redirect, signInRedirect } from "../auth/http.ts";
import type { AccountSessions } from "../mcp/accounts.ts";
import { dashboardContext, readDashboardForm } from "./dashboard-context.ts";
import { switched, switcherAbove, type SwitcherView } from "./dashboard/account-choice.ts";
import { csrfField, html, htmlResponse, renderPage, type SafeHtml } from "./layout.ts";
import type { NoticeCookies } from "./notice.ts";

// /dashboard/ai-keys?scope=<mine|company|tool>[&app=<address>][&provider=<name>]: the page ai_key links to, where a
// person types an AI provider key. The key goes from this form to the apps service (ai-key.set) and is never shown
// again, here or anywhere. The apps service checks who may, with the person's own signed context.

export interface AiKeyPagesDeps {
  auth: Auth;
  bus: Bus;
  contextKey: Buffer;
  accounts: AccountSessions;
  logger: Logger;
  notices: NoticeCookies;
}

const SAVED = "Saved. Tell your AI the key is added.";

const PATH = "/dashboard/ai-keys";
const ADDRESS = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

interface Target {
  scope: AiKeyScope;
  address?: string;
  provider?: string;
  /** The page's own path and query, for the form's action and the sign-in's way back. */
  self: string;
}

function targetOf(url: URL): Target | null {
  const scope = url.searchParams.get("scope");
  const address = url.searchParams.get("app") ?? undefined;
  const provider = url.searchParams.get("provider") ?? undefined;
  if (!AI_KEY_SCOPES.includes(scope as AiKeyScope)) return null;
  if (address !== undefined && !ADDRESS.test(address)) return null;
  if (provider !== undefined && !AI_PROVIDER_NAME.test(provider)) return null;
  return { scope: scope as AiKeyScope, address, provider, self: `${PATH}${url.search}` };
}

const WHO_PAYS: Record<AiKeyScope, (page: AiKeyPage) => string> = {
  mine: () =>
    "Apps set to use your own key call the AI provider with it, and your provider account pays for those calls.",
  company: () =>
    "Apps of the organization set to use its key call the AI provider with it, and the organization's provider account pays.",
  tool: (page) =>
    `Only the app ${page.address} uses this key; the provider account it belongs to pays for the app's AI calls.`,
};

function page(state: BrowserState & SwitcherView, title: string, body: SafeHtml, status = 200): Response {
  const user = state.user ? { email: state.user.email, csrfToken: state.csrfToken } : null;
  const above = switcherAbove(state);
  return htmlResponse(renderPage({ title, user, body, section: "ai-keys", above }), {
    status,
    headers: cookieHeaders(state.setCookies),
  });
}

function problem(state: BrowserState, message: string, status: number): Response {
  return page(state, "AI key", html`<h1>AI key</h1><p class="error" role="alert">${message}</p>`, status);
}

function keyPage(
  state: BrowserState,
  target: Target,
  data: AiKeyPage,
  notice: { saved: string } | { error: string } | null,
  status = 200,
): Response {
  const preselect = target.provider ?? data.keys[0]?.provider ?? data.providers[0]?.name;
  const keys = data.keys.length
    ? html`<table><thead><tr><th>Provider</th><th>Added</th><th>By</th></tr></thead><tbody>${data.keys.map(
        (k) =>
          html`<tr><td>${k.provider}</td><td>${k.addedAt.slice(0, 16).replace("T", " ")} UTC</td><td>${k.addedBy}</td></tr>`,
      )}</tbody></table>`
    : html`<p class="muted">No keys yet.</p>`;
  const shown =
    notice && "saved" in notice
      ? html`<div class="card" role="status"><strong>${notice.saved}</strong></div>`
      : notice
        ? html`<p class="error" role="alert">${notice.error}</p>`
        : "";
  const body = html`<h1>Add an AI provider key</h1>${shown}
<div class="card"><p>Whose key: <strong>${data.owner}</strong>.</p><p class="muted">${WHO_PAYS[data.scope](data)}</p></div>
<h2>Keys</h2>${keys}
<form class="stack" method="post" action="${target.self}">${csrfField(state.csrfToken)}
<label>Provider<select name="provider">${data.providers.map((p) => html`<option value="${p.name}"${p.name === preselect ? html` selected` : ""}>${p.name}</option>`)}</select></label>
<label>Key<input type="password" name="key" autocomplete="off" spellcheck="false" required minlength="8" maxlength="512"></label>
<p class="muted">Saving replaces this provider's key if there is one. Hatch keeps it encrypted and never shows it again, to you or to your AI.</p>
<div class="actions"><button type="submit">Save key</button></div></form>`;
  return page(state, "AI key", body, status);
}

/** GET and POST /dashboard/ai-keys. */
/** The key form: a CSRF token, a provider and a key of at most 512 characters. */
const KEY_FORM_MAX_BYTES = 8 * 1024;

export function aiKeyPages(deps: AiKeyPagesDeps) {
  const log = deps.logger.child({ component: "ai-key-page" });

  async function load(user: PublicUser, target: Target): Promise<AiKeyPage> {
    const { ctx, requestId } = await dashboardContext(deps, user, "read");
    return callRpc(
      deps.bus,
      "apps",
      rpcMethods.apps.aiKeyPage,
      { scope: target.scope, address: target.address },
      AiKeyPageSchema,
      { ctx, requestId },
    );
  }

  async function show(request: Request): Promise<Response> {
    const state = await deps.auth.pages.state(request);
    const url = new URL(request.url);
    if (!state.user) return signInRedirect(url.pathname + url.search, state.setCookies);
    const target = targetOf(url);
    if (!target) return problem(state, "This link is not valid. Ask your AI for a new one.", 400);
    const { text, clear } = deps.notices.take(request, state.user.id);
    if (clear) state.setCookies.push(clear);
    try {
      // The account the dashboard's switcher shows: an organization's key is that organization's.
      const shown = await switched(deps, request, { ...state, user: state.user }, url.pathname + url.search);
      return keyPage(shown, target, await load(shown.user, target), text === null ? null : { saved: text });
    } catch (error) {
      return failure(state, error);
    }
  }

  async function save(request: Request): Promise<Response> {
    const form = await readDashboardForm(deps.auth, request, KEY_FORM_MAX_BYTES);
    if ("refused" in form) return form.refused;
    const { params, state } = form;
    const url = new URL(request.url);
    if (!state.user) return signInRedirect(url.pathname + url.search, state.setCookies);
    const target = targetOf(url);
    if (!target) return problem(state, "This link is not valid. Ask your AI for a new one.", 400);
    const provider = params.get("provider") ?? "";
    const key = (params.get("key") ?? "").trim();
    try {
      const acting = await switched(deps, request, { ...state, user: state.user }, url.pathname + url.search);
      if (!AI_PROVIDER_NAME.test(provider) || key.length < 8 || key.length > 512 || /\s/.test(key)) {
        const error = !AI_PROVIDER_NAME.test(provider)
          ? "Pick a provider."
          : "Paste the whole key: 8 to 512 characters, without spaces.";
        return keyPage(acting, { ...target, provider }, await load(acting.user, target), { error }, 400);
      }
      const { ctx, requestId } = await dashboardContext(deps, acting.user, "write");
      const input = { scope: target.scope, address: target.address, provider, key };
      await callRpc(deps.bus, "apps", rpcMethods.apps.aiKeySet, input, AiKeyPageSchema, { ctx, requestId });
      // Back to the page (303): a reload shows it again rather than sending the key a second time.
      const self = url.pathname + url.search;
      return redirect(self, cookieHeaders([...state.setCookies, deps.notices.set(state.user.id, self, SAVED)]));
    } catch (error) {
      return failure(state, error);
    }
  }

  function failure(state: BrowserState, error: unknown): Response {
    if (isToolError(error) && error.code !== "internal") {
      const status = httpStatusOf(error.code);
      return problem(state, error.message, status);
    }
    log.error("AI key page failed", { error });
    return problem(state, "Something went wrong on our side. Try again in a minute.", 500);
  }

  return new Elysia({ name: "hatch-ai-keys" })
    .get(PATH, ({ request }) => show(request))
    .post(PATH, ({ request }) => save(request), { parse: "none" });
}
