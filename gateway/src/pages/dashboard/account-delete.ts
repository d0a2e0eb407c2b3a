import {
  AccountAppsSchema,
  AccountDeletionPlanSchema,
  AccountLeftSchema,
  isToolError,
  rpcMethods,
  type AccountApps,
  type AccountDeletionPlan,
} from "@hatch/contracts";
import { callRpc } from "@hatch/platform";
import { Elysia } from "elysia";
import type { Params } from "../../auth/index.ts";
import { dashboardContext } from "../dashboard-context.ts";
import { csrfField, html, htmlResponse, renderPage, type SafeHtml } from "../layout.ts";
import type { SettingsDeps, SettingsKit, SettingsSigned } from "./settings-kit.ts";
import { linked } from "./words.ts";
import { appPath, noticeOf, type Notice } from "./views.ts";

// /dashboard/settings/delete: deleting one's own Hatch account. The page says what would happen (or why not now:
// an organization they own has other members, a plan is paid); the form needs the current password and the email
// typed. Then each service does its part over its own rpc, checked there against the signed ctx's user: apps deletes
// the apps of the accounts only they belong to and their AI keys, orgs moves their apps in each organization to its
// owner and ends every membership (each organization's activity log says so), and the gateway deletes the user last
// (AI clients disconnected, browsers signed out). A retry after a partial failure finishes the job.

export const DELETE_PATH = "/dashboard/settings/delete";

interface Preview {
  plan: AccountDeletionPlan;
  apps: AccountApps["apps"];
}

export function deleteBody(csrf: string, email: string, preview: Preview, notice: Notice): SafeHtml {
  const { plan, apps } = preview;
  if (plan.refusal)
    return html`<h1>Delete your account</h1>${noticeOf(notice)}<p class="notice error" role="alert">${linked(plan.refusal)}</p>
<p><a href="/dashboard/settings">Back to settings</a></p>`;
  const appsLine = apps.length
    ? html`<li>Your ${apps.length === 1 ? "app is" : `${apps.length} apps are`} deleted with their versions, files, data and secrets: ${apps.map((a, i) => html`${i ? ", " : ""}<a href="${appPath(a.address)}">${a.name}</a> (${a.address})`)}. Their addresses are never given to anyone again.</li>`
    : html`<li>You have no apps of your own to delete.</li>`;
  const orgsLine = plan.memberships.length
    ? plan.memberships.map(
        (m) =>
          html`<li>You leave ${m.name}; the apps you own there move to its owner, ${m.ownerEmail}, and the organization's activity log records it.</li>`,
      )
    : "";
  const soloOrgs = plan.soloAccounts.filter((a) => a.kind === "company");
  const soloLine = soloOrgs.length
    ? html`<li>${soloOrgs.map((a) => a.name).join(", ")}, where nobody else is a member, ${soloOrgs.length === 1 ? "is" : "are"} deleted with it.</li>`
    : "";
  return html`<h1>Delete your account</h1>${noticeOf(notice)}
<p>Deleting ${email} cannot be undone. This is what happens:</p>
<ul>${appsLine}<li>Your AI keys are deleted.</li>${orgsLine}${soloLine}
<li>Every AI client you connected is disconnected and every browser is signed out.</li>
<li>Signing in as ${email} stops working; the address can be used to sign up again.</li></ul>
<form method="post" action="${DELETE_PATH}" class="stack">${csrfField(csrf)}
<label>Current password<input type="password" name="current" required autocomplete="current-password"></label>
<label>Type your email, ${email}, to confirm<input type="email" name="email" required autocomplete="off"></label>
<div class="actions"><button type="submit" class="danger">Delete my account</button> <a href="/dashboard/settings">Keep it</a></div></form>`;
}

export function accountDeletePages<S extends SettingsSigned>(deps: SettingsDeps, kit: SettingsKit<S>) {
  async function preview(state: S): Promise<{ preview: Preview; ctx: string; requestId: string }> {
    const { ctx, requestId } = await dashboardContext(deps, state.user, "write");
    const plan = await callRpc(
      deps.bus,
      "orgs",
      rpcMethods.orgs.accountDeletion,
      { userId: state.user.id },
      AccountDeletionPlanSchema,
      { ctx, requestId },
    );
    const apps = plan.refusal
      ? []
      : (
          await callRpc(
            deps.bus,
            "apps",
            rpcMethods.apps.accountApps,
            { userId: state.user.id, accountIds: plan.soloAccounts.map((a) => a.id) },
            AccountAppsSchema,
            { ctx, requestId },
          )
        ).apps;
    return { preview: { plan, apps }, ctx, requestId };
  }

  async function show(state: S, notice: Notice = null, status = 200): Promise<Response> {
    const { preview: p } = await preview(state);
    return kit.page(state, "Delete your account", deleteBody(state.csrfToken, state.user.email, p, notice), status);
  }

  async function deleteAction(request: Request): Promise<Response> {
    const form = await kit.posted(request, DELETE_PATH);
    if (form instanceof Response) return form;
    const { state, params } = form as { state: S; params: Params };
    try {
      const typed = (params.get("email") ?? "").trim().toLowerCase();
      if (typed !== state.user.email.toLowerCase())
        return await show(
          state,
          { text: `Type your email, ${state.user.email}, to confirm. Nothing was changed.`, error: true },
          400,
        );
      if (!(await deps.auth.account.passwordIs(state.user.id, params.get("current") ?? "")))
        return await show(
          state,
          {
            text: "Your current password is not right (after 10 wrong tries an hour, wait). Nothing was changed.",
            error: true,
          },
          400,
        );
      const { preview: p, ctx, requestId } = await preview(state);
      if (p.plan.refusal) return await show(state, null, 409);
      const userId = state.user.id;
      await callRpc(
        deps.bus,
        "apps",
        rpcMethods.apps.accountDelete,
        { userId, accountIds: p.plan.soloAccounts.map((a) => a.id) },
        AccountAppsSchema,
        { ctx, requestId },
      );
      await callRpc(deps.bus, "orgs", rpcMethods.orgs.accountDelete, { userId }, AccountLeftSchema, { ctx, requestId });
      await deps.auth.account.deleteUser(userId);
      deps.logger.info("account deleted on the dashboard", { userId, rid: requestId });
      const body = html`<h1>Your account is deleted</h1><p>${state.user.email} no longer has a Hatch account, and every AI client and browser is signed out.</p>
<p><a href="/">Hatch's start page</a></p>`;
      return htmlResponse(renderPage({ title: "Account deleted", body, user: null }));
    } catch (error) {
      if (isToolError(error) && error.code === "conflict") return await show(state, null, 409);
      return kit.problem(state, error);
    }
  }

  return new Elysia({ name: "hatch-dashboard-account-delete" })
    .get(DELETE_PATH, ({ request }) => kit.guard((state, notice) => show(state, notice))(request))
    .post(DELETE_PATH, ({ request }) => deleteAction(request), { parse: "none" });
}
