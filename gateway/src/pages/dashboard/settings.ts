import {
  ai_key,
  DashboardAppSchema,
  list_tools,
  org,
  org_member_update,
  org_members,
  org_setup,
  rpcMethods,
  tool_secret,
  type AiKeyScope,
  type OrgMembersOutput,
  type OrgOutput,
  type ToolContract,
} from "@hatch/contracts";
import { callRpc } from "@hatch/platform";
import { Elysia } from "elysia";
import type { Params } from "../../auth/index.ts";
import { cookieHeaders } from "../../auth/index.ts";
import { redirect } from "../../auth/http.ts";
import { dashboardContext } from "../dashboard-context.ts";
import { csrfField, html, type SafeHtml } from "../layout.ts";
import { callTool, readTool, Refusal } from "./calls.ts";
import { appPath, noticeOf, when, type Notice } from "./views.ts";
import { accountDeletePages, DELETE_PATH } from "./account-delete.ts";
import type { SettingsDeps, SettingsKit, SettingsSigned as Signed } from "./settings-kit.ts";

// /dashboard/settings: the person's own account (name, password), their organization's ownership, and every secret and
// AI key they hold, listed by name with Delete (values are never read here: apps gives names and whether one is set).
// Organization changes and deletes are the tools themselves (calls.ts); a delete's question becomes the confirm step.

export const SETTINGS_PATH = "/dashboard/settings";
/** How many of the person's apps the secrets list reads (one read each); past it the page says where the rest are. */
const SECRET_APPS_MAX = 50;

interface SecretRow {
  address: string;
  appName: string;
  name: string;
  isSet: boolean;
}

interface KeyRow {
  scope: AiKeyScope;
  provider: string;
  address: string | null;
  addedAt: string;
  addedBy: string;
}

export interface SettingsData {
  name: string;
  email: string;
  emailVerified: boolean;
  org: OrgOutput | null;
  members: OrgMembersOutput["members"];
  secrets: SecretRow[];
  /** Apps past SECRET_APPS_MAX, whose secrets are on their own pages. */
  moreApps: number;
  keys: KeyRow[];
}

const SCOPE_WORDS: Record<AiKeyScope, string> = {
  mine: "Yours (apps set to use your own key)",
  company: "The organization's",
  tool: "One app's",
};

export function settingsBody(csrf: string, data: SettingsData, notice: Notice): SafeHtml {
  const post = (action: string, inner: SafeHtml, attrs: SafeHtml | "" = html` class="stack"`) =>
    html`<form method="post" action="${SETTINGS_PATH}/${action}"${attrs}>${csrfField(csrf)}${inner}</form>`;
  const typed = (field: string) => (notice?.error ? (notice.typed?.[field] ?? "") : "");

  const account = html`<section aria-labelledby="account"><h2 id="account">Your account</h2>
<p>Email <strong>${data.email}</strong> · ${data.emailVerified ? "verified" : html`not verified yet: <a href="/verify-email">verify it</a>`}</p>
${post("name", html`<label>Name<input type="text" name="name" required maxlength="100" autocomplete="name" value="${typed("name") || data.name}"></label><div class="actions"><button type="submit">Save name</button></div>`)}
<h3>Email</h3>
${post(
  "email",
  html`<label>New email<input type="email" name="email" required autocomplete="email" value="${typed("email")}"></label>
<label>Current password<input type="password" name="current" required autocomplete="current-password"></label>
<p class="muted">We mail a link to the new address; your email changes when you open it, and stays ${data.email} until then.</p>
<div class="actions"><button type="submit">Change email</button></div>`,
)}
<h3>Password</h3>
${post(
  "password",
  html`<label>Current password<input type="password" name="current" required autocomplete="current-password"></label>
<label>New password (at least 8 characters)<input type="password" name="password" required minlength="8" autocomplete="new-password"></label>
<p class="muted">Saving signs out every other browser. Connected AI clients stay connected; disconnect them on <a href="/dashboard/tokens">Connected clients</a>.</p>
<div class="actions"><button type="submit">Change password</button></div>`,
)}</section>`;

  const who = data.org;
  let organization: SafeHtml | "" = "";
  if (who?.org) {
    const others = data.members.filter((m) => m.email !== data.email);
    const transfer =
      who.can.transferOwnership && others.length
        ? post(
            "transfer",
            html`<label>New owner<select name="email">${others.map((m) => html`<option value="${m.email}">${m.name} (${m.email}) · ${m.role}</option>`)}</select></label>
<label class="choice"><input type="checkbox" name="sure" value="yes" required> I understand: they become the owner, and I become an admin.</label>
<div class="actions"><button type="submit" class="danger">Transfer ownership</button></div>`,
          )
        : who.can.transferOwnership
          ? html`<p class="muted">Ownership can go to another member once someone has joined.</p>`
          : html`<p class="muted">Only the owner, ${who.org.owner.name} (${who.org.owner.email}), can transfer ownership.</p>`;
    // Leaving is a removal of oneself (orgs asks who receives one's apps); orgs lets managers and admins do it.
    const leave =
      who.role === "owner"
        ? html`<p class="muted">The owner leaves only after transferring ownership to another member.</p>`
        : who.can.manageMembers
          ? post(
              "leave",
              html`<p>Your apps in ${who.org.name} stay in it: you choose who receives them on the next step.</p><div class="actions"><button type="submit" class="danger">Leave ${who.org.name}</button></div>`,
            )
          : html`<p class="muted">To leave ${who.org.name}, ask its owner, an admin or a manager to remove you; your apps stay in the organization.</p>`;
    organization = html`<section aria-labelledby="organization"><h2 id="organization">Organization</h2>
<p><strong>${who.org.name}</strong>: you are ${who.role}. Members, roles, permissions and invitations are on the <a href="/dashboard/org">organization page</a>.</p>
${
  who.role === "owner" || who.role === "admin"
    ? html`<h3>Name</h3>${post("rename", html`<label>Organization name<input type="text" name="orgName" required maxlength="100" value="${typed("orgName") || who.org.name}"></label><div class="actions"><button type="submit">Rename the organization</button></div>`)}`
    : ""
}<h3>Ownership</h3>${transfer}<h3>Leave</h3>${leave}</section>`;
  }

  const secretRow = (s: SecretRow) =>
    html`<tr data-secret="${s.address}/${s.name}"><td>${s.name}</td><td><a href="${appPath(s.address)}">${s.appName}</a></td><td>${s.isSet ? "set" : "not set"}</td>
<td>${s.isSet ? post("secrets/delete", html`<input type="hidden" name="address" value="${s.address}"><input type="hidden" name="name" value="${s.name}"><button type="submit" class="danger">Delete ${s.name} of ${s.address}</button>`, "") : html`<a href="${appPath(s.address)}/secrets/${encodeURIComponent(s.name)}">Set it</a>`}</td></tr>`;
  const secrets = data.secrets.length
    ? html`<table><thead><tr><th>Secret</th><th>App</th><th>Value</th><th>Action</th></tr></thead><tbody>${data.secrets.map(secretRow)}</tbody></table>`
    : html`<p class="muted">None of your apps has a secret.</p>`;
  const more = data.moreApps
    ? html`<p class="muted">${data.moreApps} more apps are not listed here; their secrets are on each app's page.</p>`
    : "";

  const keyRow = (k: KeyRow) =>
    html`<tr data-key="${k.scope}/${k.provider}"><td>${k.provider}</td><td>${k.address ? html`For <a href="${appPath(k.address)}">${k.address}</a>` : SCOPE_WORDS[k.scope]}</td><td>${when(k.addedAt)} by ${k.addedBy}</td>
<td>${post("ai-keys/delete", html`<input type="hidden" name="scope" value="${k.scope}"><input type="hidden" name="provider" value="${k.provider}">${k.address ? html`<input type="hidden" name="address" value="${k.address}">` : ""}<button type="submit" class="danger">Delete the ${k.provider} key${k.address ? ` of ${k.address}` : ""}</button>`, "")}</td></tr>`;
  const keys = data.keys.length
    ? html`<table><thead><tr><th>Provider</th><th>Whose</th><th>Added</th><th>Action</th></tr></thead><tbody>${data.keys.map(keyRow)}</tbody></table>`
    : html`<p class="muted">No AI keys yet.</p>`;

  return html`<h1>Settings</h1>${noticeOf(notice)}${account}${organization}
<section aria-labelledby="secrets"><h2 id="secrets">Secrets</h2><p class="muted">Values are never shown, here or to your AI. Deleting one asks you to confirm first.</p>${secrets}${more}</section>
<section aria-labelledby="keys"><h2 id="keys">AI keys</h2><p class="muted">Keys are never shown again once saved. Add one on the <a href="/dashboard/ai-keys?scope=mine">AI keys page</a>.</p>${keys}</section>
<section aria-labelledby="delete-account"><h2 id="delete-account">Delete account</h2><p class="muted">Deleting your account deletes your own apps, secrets and AI keys; apps you own in an organization move to its owner. The next page lists exactly what happens before you confirm.</p><p><a href="${DELETE_PATH}">Delete your account…</a></p></section>`;
}

export function settingsPages<S extends Signed>(deps: SettingsDeps, kit: SettingsKit<S>) {
  async function load(state: S): Promise<SettingsData> {
    const user = state.user;
    const [who, listed, mine, company] = await Promise.all([
      readTool(deps, user, org, {}),
      readTool(deps, user, list_tools, { include: "mine" }),
      callTool(deps, user, ai_key, { action: "link", scope: "mine" }),
      callTool(deps, user, ai_key, { action: "link", scope: "company" }),
    ]);
    const members = who.org ? (await readTool(deps, user, org_members, { include: "members" })).members : [];
    const owned = listed.apps.filter((a) => !a.sharedWithMe);
    const { ctx, requestId } = await dashboardContext(deps, user, "read");
    const apps = await Promise.all(
      owned.slice(0, SECRET_APPS_MAX).map((a) =>
        callRpc(deps.bus, "apps", rpcMethods.apps.dashboardApp, { address: a.address }, DashboardAppSchema, {
          ctx,
          requestId,
        }),
      ),
    );
    const secrets = apps.flatMap((a) =>
      a.secrets.map((s) => ({ address: a.address, appName: a.name, name: s.name, isSet: s.isSet })),
    );
    // A key of the organization is listed only to who may see it (ai_key refuses the others).
    const keys = [mine, company].flatMap((answer) => (answer.kind === "done" ? answer.data.keys : []));
    const seen = new Set<string>();
    return {
      name: user.name,
      email: user.email,
      emailVerified: user.emailVerified,
      org: who,
      members,
      secrets,
      moreApps: Math.max(0, owned.length - SECRET_APPS_MAX),
      keys: keys.filter((k) => {
        const id = `${k.scope}/${k.provider}/${k.address ?? ""}`;
        return seen.has(id) ? false : (seen.add(id), true);
      }),
    };
  }

  async function settingsPage(state: S, notice: Notice = null, status = 200): Promise<Response> {
    return kit.page(state, "Settings", settingsBody(state.csrfToken, await load(state), notice), status);
  }

  /** A refused form: the page again with the words and what was typed (never a password). */
  const refusedWith = (state: S, text: string, typed: Record<string, string> = {}, status = 400) =>
    settingsPage(state, { text, error: true, typed }, status);

  async function nameAction(request: Request): Promise<Response> {
    const form = await kit.posted(request, SETTINGS_PATH);
    if (form instanceof Response) return form;
    const { state, params } = form;
    try {
      const name = params.get("name") ?? "";
      const outcome = await deps.auth.account.rename(state.user.id, name);
      if (!outcome.ok) return await refusedWith(state, outcome.error, { name });
      return kit.done(state, SETTINGS_PATH, "Your name is saved.");
    } catch (error) {
      return kit.problem(state, error);
    }
  }

  async function emailAction(request: Request): Promise<Response> {
    const form = await kit.posted(request, SETTINGS_PATH);
    if (form instanceof Response) return form;
    const { state, params } = form;
    try {
      const email = (params.get("email") ?? "").trim();
      const outcome = await deps.auth.account.requestEmailChange(state.user, params.get("current") ?? "", email);
      if (!outcome.ok) return await refusedWith(state, outcome.error, { email });
      return kit.done(
        state,
        SETTINGS_PATH,
        `We sent a link to ${email}. Open it to make it your email; until then your email stays ${state.user.email}.`,
      );
    } catch (error) {
      return kit.problem(state, error);
    }
  }

  async function passwordAction(request: Request): Promise<Response> {
    const form = await kit.posted(request, SETTINGS_PATH);
    if (form instanceof Response) return form;
    const { state, params } = form;
    try {
      const outcome = await deps.auth.account.changePassword(
        state,
        params.get("current") ?? "",
        params.get("password") ?? "",
      );
      if (!outcome.ok) return await refusedWith(state, outcome.error);
      const others =
        outcome.signedOut === 0
          ? "No other browser was signed in."
          : `${outcome.signedOut} other browser${outcome.signedOut === 1 ? " was" : "s were"} signed out.`;
      const cookies = [
        ...state.setCookies,
        outcome.cookie,
        deps.notices.set(state.user.id, SETTINGS_PATH, `Your password is changed. ${others}`),
      ];
      return redirect(SETTINGS_PATH, cookieHeaders(cookies));
    } catch (error) {
      return kit.problem(state, error);
    }
  }

  /** A tool's answer on this page: done, refused (with what was typed), or its question as the confirm step. */
  async function toolAction(
    request: Request,
    contract: ToolContract,
    inputOf: (params: Params) => Record<string, unknown>,
    action: string,
    /** The input when it is the person's own (leaving: their own email), not the form's. */
    ownInput?: (state: S) => Record<string, unknown>,
  ): Promise<Response> {
    const form = await kit.posted(request, SETTINGS_PATH);
    if (form instanceof Response) return form;
    const { state, params } = form;
    try {
      // The transfer's box is required on the form; without it (a form sent by hand) the tool is not called.
      if (contract === org_member_update && !ownInput && params.get("sure") !== "yes")
        return await refusedWith(state, "Tick the box to confirm the transfer. Nothing was changed.");
      if (contract === org_setup && !(params.get("orgName") ?? "").trim())
        return await refusedWith(state, "Enter the organization's name. Nothing was changed.");
      const input = ownInput ? ownInput(state) : inputOf(params);
      const answer = await callTool(deps, state.user, contract, input as never);
      if (answer.kind === "ask") return kit.askPage(state, contract, input, SETTINGS_PATH, answer.question, action);
      if (answer.kind === "refused") {
        const typed: Record<string, string> = { orgName: params.get("orgName") ?? "" };
        return await refusedWith(state, answer.message, typed, new Refusal(answer.code, answer.message).status);
      }
      return kit.done(state, SETTINGS_PATH, answer.text);
    } catch (error) {
      return kit.problem(state, error);
    }
  }

  const raw = { parse: "none" } as const;
  return new Elysia({ name: "hatch-dashboard-settings" })
    .use(accountDeletePages(deps, kit))
    .get(SETTINGS_PATH, ({ request }) => kit.guard((state, notice) => settingsPage(state, notice))(request))
    .post(`${SETTINGS_PATH}/name`, ({ request }) => nameAction(request), raw)
    .post(`${SETTINGS_PATH}/password`, ({ request }) => passwordAction(request), raw)
    .post(`${SETTINGS_PATH}/email`, ({ request }) => emailAction(request), raw)
    .post(
      `${SETTINGS_PATH}/transfer`,
      ({ request }) =>
        toolAction(
          request,
          org_member_update,
          (p) => ({ action: "transfer_ownership", email: p.get("email") }),
          "Transfer ownership",
        ),
      raw,
    )
    .post(
      `${SETTINGS_PATH}/rename`,
      ({ request }) =>
        toolAction(
          request,
          org_setup,
          (p) => ({ action: "rename", name: (p.get("orgName") ?? "").trim() }),
          "Rename the organization",
        ),
      raw,
    )
    .post(
      `${SETTINGS_PATH}/leave`,
      ({ request }) =>
        toolAction(
          request,
          org_member_update,
          () => ({}),
          "Leave the organization",
          (state) => ({
            action: "remove",
            email: state.user.email,
          }),
        ),
      raw,
    )
    .post(
      `${SETTINGS_PATH}/secrets/delete`,
      ({ request }) =>
        toolAction(
          request,
          tool_secret,
          (p) => ({ action: "delete", address: p.get("address"), name: p.get("name") }),
          "Delete the secret",
        ),
      raw,
    )
    .post(
      `${SETTINGS_PATH}/ai-keys/delete`,
      ({ request }) =>
        toolAction(
          request,
          ai_key,
          (p) => ({
            action: "delete",
            scope: p.get("scope"),
            provider: p.get("provider"),
            ...(p.get("address") ? { address: p.get("address") } : {}),
          }),
          "Delete the key",
        ),
      raw,
    );
}
