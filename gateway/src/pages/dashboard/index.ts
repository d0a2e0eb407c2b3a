import { callRpc } from "@hatch/platform";
import {
  buy_domain,
  company_domain_set,
  custom_domain,
  DashboardAppSchema,
  delete_tool,
  isToolError,
  list_tools,
  org,
  org_activity,
  org_app_pause,
  org_apps,
  org_invite,
  org_member_update,
  org_members,
  ORG_PERMISSIONS,
  rollback,
  rpcMethods,
  share,
  tool_stats,
  tool_secret,
  ai_key,
  type DashboardApp,
  type ToolContract,
  type ToolStatsOutput,
} from "@hatch/contracts";
import { Elysia } from "elysia";
import { listConsents, removeConsent } from "../../app-consents.ts";
import { cookieHeaders, type BrowserState, type Params } from "../../auth/index.ts";
import { localPath, redirect, signInRedirect } from "../../auth/http.ts";
import { parseAnswer } from "../../confirm/form.ts";
import { dashboardContext, readDashboardForm } from "../dashboard-context.ts";
import { html, htmlResponse, renderPage, sectionOf, type PageScript, type SafeHtml } from "../layout.ts";
import type { DashboardPagesDeps, Signed } from "./deps.ts";
import { insightPages } from "./insight.ts";
import { accountPages } from "./account-pages.ts";
import { switched, switcherAbove } from "./account-choice.ts";
import { callTool, readTool, Refusal, type ToolAnswer } from "./calls.ts";
import { announceViewerChanged } from "../../viewer-check.ts";
import { domainPageWords, domainPages, isDomainAction, refusalForPeople } from "./domains.ts";
import { SETTINGS_PATH, settingsPages } from "./settings.ts";
import { versionPages } from "./versions.ts";
import { personalOrgBody } from "./org-personal.ts";
import {
  appBody,
  appPath,
  appsListBody,
  askBody,
  orgBody,
  type Notice,
  type OrgPageData,
  type OrgShown,
} from "./views.ts";

// The person's dashboard: /dashboard (their apps and the apps shared with them), /dashboard/apps/<address> (versions,
// sharing, statistics, delete, links to the app's other pages) and /dashboard/org (members, invitations, paused apps,
// the activity log); an app's logs and data pages are insight.ts. Reads and actions are the tools themselves, called for the signed-in person (calls.ts); the only
// other read is apps' `dashboard.app` (people, versions, secrets of an app they own).

const FORM_MAX_BYTES = 16 * 1024;

function page(
  state: Signed | (BrowserState & { path?: string }),
  title: string,
  body: SafeHtml,
  status = 200,
  script?: PageScript,
): Response {
  const user = state.user ? { email: state.user.email, csrfToken: state.csrfToken } : null;
  const section = state.path ? sectionOf(state.path) : undefined;
  const above = switcherAbove(state);
  return htmlResponse(renderPage({ title, user, body, script, section, above }), {
    status,
    headers: cookieHeaders(state.setCookies),
    script,
  });
}

/** The styled answer for a path nothing serves, with a way back. */
export function notFoundPage(state: BrowserState | null): Response {
  const back = state?.user ? html`<a href="/dashboard">your dashboard</a>` : html`<a href="/">Hatch's start page</a>`;
  const body = html`<h1>Page not found</h1><p>There is no page at this address. It may have moved, or the link has a typo.</p>
<p>Go back to ${back}.</p>`;
  const user = state?.user ? { email: state.user.email, csrfToken: state.csrfToken } : null;
  return htmlResponse(renderPage({ title: "Page not found", user, body }), {
    status: 404,
    headers: cookieHeaders(state?.setCookies ?? []),
  });
}

/** Tools the confirm step may send again (each one's question is answered on /dashboard/confirm). */
const CONFIRMABLE = new Map<string, ToolContract>(
  [
    share,
    delete_tool,
    org_invite,
    org_member_update,
    custom_domain,
    tool_secret,
    ai_key,
    buy_domain,
    company_domain_set,
  ].map((c) => [c.name, c]),
);

/** The text fields a refused form brings back as typed (never the CSRF token). */
const TYPED_FIELDS = ["add", "emails", "address", "reason"] as const;
const typedFields = (params: Params) =>
  Object.fromEntries(TYPED_FIELDS.flatMap((name) => (params.get(name) ? [[name, params.get(name) ?? ""]] : [])));

/** A comma/space separated list of emails, as typed. */
const emailList = (raw: string | undefined) => (raw ?? "").split(/[\s,;]+/).filter(Boolean);

export function dashboardPages(deps: DashboardPagesDeps) {
  const signIn = (state: BrowserState, path: string) => signInRedirect(path, state.setCookies);

  /** A page's request for a signed-in person, or the sign-in redirect. */
  async function signed(request: Request): Promise<Signed | Response> {
    const state = await deps.auth.pages.state(request);
    const url = new URL(request.url);
    if (!state.user) return signIn(state, url.pathname);
    return switched(deps, request, { ...state, user: state.user, path: url.pathname }, url.pathname + url.search);
  }

  /** A CSRF-checked form post from a signed-in person, or the answer that refuses it. */
  async function posted(request: Request, back: string): Promise<{ state: Signed; params: Params } | Response> {
    const form = await readDashboardForm(deps.auth, request, FORM_MAX_BYTES);
    if ("refused" in form) return form.refused;
    if (!form.state.user) return signIn(form.state, back);
    return {
      state: await switched(
        deps,
        request,
        { ...form.state, user: form.state.user, path: new URL(request.url).pathname },
        back,
      ),
      params: form.params,
    };
  }

  /** A form that worked: back to `path` (303), which shows `text` once; a reload does not send the form again. */
  function done(state: Signed, path: string, text: string): Response {
    return redirect(path, cookieHeaders([...state.setCookies, deps.notices.set(state.user.id, path, text)]));
  }

  function problem(state: BrowserState, error: unknown): Response {
    const refusal =
      error instanceof Refusal
        ? error
        : isToolError(error) && error.code !== "internal"
          ? new Refusal(error.code, error.message)
          : null;
    if (!refusal) {
      deps.logger.error("dashboard page failed", { error });
      return page(
        state,
        "Something went wrong",
        html`<h1>Something went wrong</h1><p class="error" role="alert">Something went wrong on our side. Try again in a minute.</p><p><a href="/dashboard">Back to your apps</a></p>`,
        500,
      );
    }
    const title = refusal.code === "not_found" ? "Not found" : "Not possible";
    return page(
      state,
      title,
      html`<h1>${title}</h1><p class="error" role="alert">${refusal.message}</p><p><a href="/dashboard">Back to your apps</a></p>`,
      refusal.status,
    );
  }

  // ---- /dashboard

  async function listPage(state: Signed, notice: Notice = null, status = 200): Promise<Response> {
    const [{ apps }, consents] = await Promise.all([
      readTool(deps, state.user, list_tools, { include: "all" }),
      listConsents(deps.db, state.user.id),
    ]);
    const unverified = state.user.emailVerified ? null : state.user.email;
    const account = state.view?.current;
    return page(state, "Your apps", appsListBody(apps, notice, state.csrfToken, consents, unverified, account), status);
  }

  /**
   * `POST /dashboard/consents/remove`: the person takes back a public app's consent. Gateway data, not a tool's: the
   * row goes, and every app host drops what it cached about this person before the page answers, so the app's next
   * request (hatch.me(), data, server code) sees nobody signed in.
   */
  async function removeConsentAction(request: Request): Promise<Response> {
    const form = await posted(request, "/dashboard");
    if (form instanceof Response) return form;
    const { state, params } = form;
    try {
      const removed = await removeConsent(deps.db, state.user.id, params.get("appId") ?? "");
      if (!removed) return done(state, "/dashboard", "That app was already removed from your list.");
      await announceViewerChanged(deps.bus, deps.logger, { sub: state.user.id }, true);
      deps.logger.info("app consent removed", { user: state.user.id, address: removed.address });
      const name = removed.appName || removed.address;
      return done(
        state,
        "/dashboard",
        `${name} no longer learns who you are. It asks again if you sign in to it; what it already stored stays with it.`,
      );
    } catch (error) {
      return problem(state, error);
    }
  }

  // ---- /dashboard/apps/<address>

  async function appPage(
    state: Signed,
    address: string,
    notice: Notice = null,
    status = 200,
    typed = "",
  ): Promise<Response> {
    const { ctx, requestId } = await dashboardContext(deps, state.user, "read");
    const app: DashboardApp = await callRpc(
      deps.bus,
      "apps",
      rpcMethods.apps.dashboardApp,
      { address },
      DashboardAppSchema,
      { ctx, requestId },
    );
    let stats: ToolStatsOutput | null = null;
    try {
      stats = await readTool(deps, state.user, tool_stats, { address: app.address, days: 7 });
    } catch (error) {
      deps.logger.warn("dashboard statistics unavailable", { error });
    }
    return page(state, app.name, appBody(state.csrfToken, app, stats, notice, typed), status);
  }

  /** After an action on an app: its page with the tool's words (or its refusal), or the confirm step. */
  async function afterAppAction<C extends ToolContract>(
    state: Signed,
    address: string,
    contract: C,
    input: unknown,
    answer: ToolAnswer<C>,
    typed: Record<string, string> = {},
  ): Promise<Response> {
    if (answer.kind === "ask")
      return askPage(state, contract, input, appPath(address), answer.question, "Make it public");
    if (answer.kind === "refused") return appPage(state, address, { text: answer.message, error: true, typed }, 400);
    return done(state, appPath(address), answer.text);
  }

  async function rollbackAction(request: Request, address: string): Promise<Response> {
    const form = await posted(request, appPath(address));
    if (form instanceof Response) return form;
    const { state, params } = form;
    try {
      const input = { address, version: Number(params.get("version")) };
      return await afterAppAction(state, address, rollback, input, await callTool(deps, state.user, rollback, input));
    } catch (error) {
      return problem(state, error);
    }
  }

  async function shareAction(request: Request, address: string): Promise<Response> {
    const form = await posted(request, appPath(address));
    if (form instanceof Response) return form;
    const { state, params } = form;
    try {
      const input: Record<string, unknown> = { address };
      if (params.get("settings")) {
        input.visibility = params.get("visibility");
        // An unchecked box is not posted; for a non-public app the service keeps it off anyway.
        const discoverable = params.get("aiDiscoverable") === "true";
        if (discoverable || params.get("visibility") === "public") input.aiDiscoverable = discoverable;
      }
      const add = emailList(params.get("add"));
      const remove = emailList(params.get("remove"));
      if (add.length) input.add = add;
      if (remove.length) input.remove = remove;
      const answer = await callTool(deps, state.user, share, input as never);
      return await afterAppAction(state, address, share, input, answer, typedFields(params));
    } catch (error) {
      return problem(state, error);
    }
  }

  async function deleteAction(request: Request, address: string): Promise<Response> {
    const form = await posted(request, appPath(address));
    if (form instanceof Response) return form;
    const { state, params } = form;
    try {
      const typed = (params.get("typed") ?? "").trim();
      if (typed.toLowerCase() !== address.toLowerCase()) {
        const text = `Type the address ${address} exactly to delete the app. Nothing was deleted.`;
        return await appPage(state, address, { text, error: true }, 400, typed);
      }
      // Typing the address is the person's own answer to the tool's question: it is sent with the question's token.
      const input = { address };
      const first = await callTool(deps, state.user, delete_tool, input);
      const deleted =
        first.kind === "ask"
          ? await callTool(deps, state.user, delete_tool, input, {
              answer: { confirm: true },
              confirm: first.question.confirm,
            })
          : first;
      if (deleted.kind === "refused") return await appPage(state, address, { text: deleted.message, error: true }, 400);
      if (deleted.kind === "ask")
        return await appPage(state, address, { text: deleted.question.message, error: true }, 400);
      return done(state, "/dashboard", deleted.text);
    } catch (error) {
      return problem(state, error);
    }
  }

  // ---- the confirm step

  function askPage(
    state: Signed,
    contract: ToolContract,
    input: unknown,
    back: string,
    question: import("@hatch/contracts").Question,
    action: string,
    values?: Record<string, string>,
    error?: string,
  ): Response {
    const body = askBody(
      state.csrfToken,
      { tool: contract.name, input, back, question, values, error },
      contract.class === "delete",
      action,
    );
    return page(state, "Please confirm", body, error ? 400 : 200);
  }

  /**
   * `POST /dashboard/confirm`: the person answered a tool's question. The tool is asked again with the same input (so
   * the question and its token are fresh and bound to this person), then called with their answer and that token.
   */
  async function confirmAction(request: Request): Promise<Response> {
    const form = await posted(request, "/dashboard");
    if (form instanceof Response) return form;
    const { state, params } = form;
    try {
      const contract = CONFIRMABLE.get(params.get("tool") ?? "");
      const back = localPath(params.get("back") ?? "", deps.baseUrl) ?? "/dashboard";
      let input: unknown;
      try {
        input = JSON.parse(params.get("input") ?? "");
      } catch {
        input = undefined;
      }
      if (!contract || !back.startsWith("/dashboard") || !input || typeof input !== "object")
        return problem(state, new Refusal("invalid_input", "This form is not valid. Go back and try again."));
      // A domain's tool answers in words for an AI; the page says it in its own.
      const inWords = (answer: ToolAnswer<ToolContract>): ToolAnswer<ToolContract> => {
        if (!isDomainAction(contract)) return answer;
        if (answer.kind === "refused") return { ...answer, message: refusalForPeople(answer.message) };
        if (answer.kind === "done") return { ...answer, text: domainPageWords(contract, answer.data) ?? answer.text };
        return answer;
      };
      const first = await callTool(deps, state.user, contract, input as never);
      if (first.kind !== "ask") return outcome(state, back, inWords(first));
      const answer = parseAnswer(first.question.schema, params);
      if (!answer.ok)
        return askPage(state, contract, input, back, first.question, "Confirm", answer.values, answer.error);
      const done = await callTool(deps, state.user, contract, input as never, {
        answer: answer.answer,
        confirm: first.question.confirm,
      });
      return outcome(state, back, inWords(done));
    } catch (error) {
      return problem(state, error);
    }
  }

  /** What the confirmed tool said, on the page the action started from (a deleted app's: the list). */
  async function outcome(state: Signed, back: string, answer: ToolAnswer<ToolContract>): Promise<Response> {
    const app = back.match(/^\/dashboard\/apps\/([^/?#]+)$/);
    if (answer.kind === "done") {
      const deleted = (answer.data as { status?: string }).status === "deleted";
      return done(state, app && deleted ? "/dashboard" : back, answer.text);
    }
    const notice: Notice = { text: answer.kind === "refused" ? answer.message : answer.question.message, error: true };
    if (back === "/dashboard/org") return orgPage(state, notice, 400);
    if (back === SETTINGS_PATH) return done(state, SETTINGS_PATH, notice.text);
    if (app?.[1]) return appPage(state, decodeURIComponent(app[1]), notice, 400);
    // A domain page (its own routes, domains.ts): back there, where its words say what did not happen.
    if (back === "/dashboard/domains" || /^\/dashboard\/apps\/[^/?#]+\/domains$/.test(back))
      return done(state, back, notice.text);
    return listPage(state, notice, 400);
  }

  // ---- /dashboard/org

  /**
   * The account the switcher shows: an organization's members, invitations, paused apps and activity (orgs answers for
   * the chosen account and checks the person's role there), or for a personal account what it is and their
   * organizations to switch to.
   */
  async function orgPage(state: Signed, notice: Notice = null, status = 200): Promise<Response> {
    const who = await readTool(deps, state.user, org, {});
    if (!who.org) {
      const organizations = (state.view?.accounts ?? []).filter((a) => a.kind === "company");
      const body = personalOrgBody(state.csrfToken, who, organizations, notice);
      return page(state, "Your personal account", body, status);
    }
    const [members, paused, activity] = await Promise.all([
      readTool(deps, state.user, org_members, { include: "all" }),
      readTool(deps, state.user, org_apps, { paused: true }),
      who.can.readActivity ? readTool(deps, state.user, org_activity, { limit: 50 }) : Promise.resolve(null),
    ]);
    const shown: OrgShown = { ...who, org: who.org };
    const data: OrgPageData = { org: shown, members, paused: paused.apps, activity, me: state.user.email };
    return page(state, who.org.name, orgBody(state.csrfToken, data, notice), status);
  }

  /** An organization action: the tool's answer on the org page, or its confirm step. */
  async function orgAction<C extends ToolContract>(
    request: Request,
    contract: C,
    inputOf: (params: Params) => Record<string, unknown>,
    action: string,
  ): Promise<Response> {
    const form = await posted(request, "/dashboard/org");
    if (form instanceof Response) return form;
    const { state, params } = form;
    try {
      const input = inputOf(params);
      const answer = await callTool(deps, state.user, contract, input as never);
      if (answer.kind === "ask") return askPage(state, contract, input, "/dashboard/org", answer.question, action);
      if (answer.kind === "done") return done(state, "/dashboard/org", answer.text);
      return await orgPage(state, { text: answer.message, error: true, typed: typedFields(params) }, 400);
    } catch (error) {
      return problem(state, error);
    }
  }

  /** A page for a signed-in person, with the notice a form that worked left for it (shown once). */
  const guard = (handler: (state: Signed, notice: Notice) => Promise<Response>) => async (request: Request) => {
    const state = await signed(request);
    if (state instanceof Response) return state;
    const { text, clear } = deps.notices.take(request, state.user.id);
    if (clear) state.setCookies.push(clear);
    try {
      return await handler(state, text === null ? null : { text });
    } catch (error) {
      return problem(state, error);
    }
  };
  const raw = { parse: "none" } as const;

  return new Elysia({ name: "hatch-dashboard-pages" })
    .use(domainPages(deps, { guard, posted, done, problem, page, askPage }))
    .use(insightPages({ deps, signed, posted, done, problem, guard, page }))
    .use(settingsPages(deps, { guard, posted, done, problem, page, askPage }))
    .use(versionPages(deps, { guard, page }))
    .use(accountPages(deps, { posted, problem }))
    .get("/dashboard", ({ request }) => guard((state, notice) => listPage(state, notice))(request))
    .get("/dashboard/apps/:address", ({ request, params }) =>
      guard((state, notice) => appPage(state, params.address, notice))(request),
    )
    .post("/dashboard/apps/:address/rollback", ({ request, params }) => rollbackAction(request, params.address), raw)
    .post("/dashboard/apps/:address/share", ({ request, params }) => shareAction(request, params.address), raw)
    .post("/dashboard/apps/:address/delete", ({ request, params }) => deleteAction(request, params.address), raw)
    .post("/dashboard/confirm", ({ request }) => confirmAction(request), raw)
    .post("/dashboard/consents/remove", ({ request }) => removeConsentAction(request), raw)
    .get("/dashboard/org", ({ request }) => guard((state, notice) => orgPage(state, notice))(request))
    .post(
      "/dashboard/org/invite",
      ({ request }) =>
        orgAction(
          request,
          org_invite,
          (p) => ({ action: "invite", emails: emailList(p.get("emails")), role: p.get("role") }),
          "Send invitations",
        ),
      raw,
    )
    .post(
      "/dashboard/org/invitations/revoke",
      ({ request }) =>
        orgAction(
          request,
          org_invite,
          (p) => ({ action: "revoke", emails: emailList(p.get("email")) }),
          "Revoke the invitation",
        ),
      raw,
    )
    .post(
      "/dashboard/org/members/update",
      ({ request }) =>
        orgAction(
          request,
          org_member_update,
          (p) => ({
            action: "update",
            email: p.get("email"),
            role: p.get("role"),
            permissions: ORG_PERMISSIONS.filter((name) => p.get(`permission.${name}`)),
          }),
          "Change the role",
        ),
      raw,
    )
    .post(
      "/dashboard/org/members/remove",
      ({ request }) =>
        orgAction(
          request,
          org_member_update,
          (p) => ({ action: "remove", email: p.get("email"), appsRecipient: p.get("appsRecipient") || undefined }),
          "Remove the member",
        ),
      raw,
    )
    .post(
      "/dashboard/org/apps/pause",
      ({ request }) =>
        orgAction(
          request,
          org_app_pause,
          (p) => ({
            address: (p.get("address") ?? "").trim(),
            paused: p.get("paused") === "true",
            reason: p.get("reason") || undefined,
          }),
          "Pause",
        ),
      raw,
    );
}
