import { callRpc, type Bus, type Logger } from "@hatch/platform";
import {
  InvitationAcceptedSchema,
  InvitationPreviewSchema,
  httpStatusOf,
  isToolError,
  rpcMethods,
  type InvitationPreview,
} from "@hatch/contracts";
import { Elysia } from "elysia";
import type { Auth, BrowserState } from "../auth/index.ts";
import type { AccountSessions } from "../mcp/accounts.ts";
import { csrfField, html, htmlResponse, renderPage, type SafeHtml } from "./layout.ts";
import { callServiceRpc, websiteCaller } from "../services.ts";
import { signInRedirect } from "../auth/http.ts";

export interface InvitePagesDeps {
  auth: Auth;
  bus: Bus;
  contextKey: Buffer;
  accounts: AccountSessions;
  logger: Logger;
}

const TOKEN = /^[A-Za-z0-9_-]{16,128}$/;
const ROLE_WORDS: Record<string, string> = {
  admin: "an admin",
  manager: "a manager",
  member: "a member",
  owner: "the owner",
};

function page(state: BrowserState, title: string, body: SafeHtml, status = 200): Response {
  const user = state.user ? { email: state.user.email, csrfToken: state.csrfToken } : null;
  return htmlResponse(renderPage({ title, user, body }), {
    status,
    headers: state.setCookies.map((c): [string, string] => ["Set-Cookie", c]),
  });
}

function problem(state: BrowserState, title: string, message: string, status: number): Response {
  return page(
    state,
    title,
    html`<h1>${title}</h1><p class="error" role="alert">${message}</p><p><a href="/">Back to Hatch</a></p>`,
    status,
  );
}

/** What the page says about an invitation that can no longer be accepted. */
function closedMessage(preview: InvitationPreview): string {
  if (preview.status === "expired")
    return `This invitation to ${preview.orgName} expired. Ask ${preview.invitedBy.email} to invite you again.`;
  if (preview.status === "revoked")
    return `This invitation to ${preview.orgName} was withdrawn. Ask ${preview.invitedBy.email} if you should still join.`;
  return `This invitation to ${preview.orgName} was already accepted.`;
}

function invitationPage(state: BrowserState, token: string, preview: InvitationPreview): Response {
  const path = `/invite/${token}`;
  const intro = html`<p><strong>${preview.invitedBy.name}</strong> (${preview.invitedBy.email}) invited <strong>${preview.email}</strong>
to join <strong>${preview.orgName}</strong> on Hatch as ${ROLE_WORDS[preview.role] ?? preview.role}.</p>`;
  if (!state.user) {
    const next = encodeURIComponent(path);
    const body = html`<h1>Join ${preview.orgName}</h1><div class="card">${intro}</div>
<p>Create a Hatch account (or sign in) to accept.</p>
<div class="actions"><a href="/signup?next=${next}">Create an account</a> <a href="/signin?next=${next}">Sign in</a></div>`;
    return page(state, `Join ${preview.orgName}`, body);
  }
  const other =
    state.user.email.toLowerCase() !== preview.email.toLowerCase()
      ? html`<p class="muted">The invitation went to ${preview.email}; you will join as ${state.user.email}.</p>`
      : "";
  const body = html`<h1>Join ${preview.orgName}</h1><div class="card">${intro}</div>${other}
<p>Once you join, your AI clients act in ${preview.orgName}; apps you publish belong to it.</p>
<form method="post" action="${path}">${csrfField(state.csrfToken)}
<div class="actions"><button type="submit">Join ${preview.orgName}</button></div></form>`;
  return page(state, `Join ${preview.orgName}`, body);
}

/** `/invite/<token>`: the link in an invitation email. Works for someone without an account: sign up, come back, join. */
export function invitePages(deps: InvitePagesDeps) {
  const preview = (token: string) =>
    callRpc(deps.bus, "orgs", rpcMethods.orgs.previewInvitation, { token }, InvitationPreviewSchema);

  async function show(request: Request, token: string): Promise<Response> {
    const state = await deps.auth.pages.state(request);
    if (!TOKEN.test(token))
      return problem(
        state,
        "Invitation not found",
        "This invitation link is not valid. Ask for a new invitation.",
        404,
      );
    try {
      const found = await preview(token);
      if (found.status !== "pending") return problem(state, "Invitation closed", closedMessage(found), 410);
      return invitationPage(state, token, found);
    } catch (error) {
      return failure(state, error);
    }
  }

  async function accept(request: Request, token: string): Promise<Response> {
    const form = await deps.auth.pages.form(request);
    if ("refused" in form) return form.refused;
    const { state } = form;
    if (!state.user) return signInRedirect(`/invite/${token}`);
    if (!TOKEN.test(token))
      return problem(
        state,
        "Invitation not found",
        "This invitation link is not valid. Ask for a new invitation.",
        404,
      );
    const user = state.user;
    try {
      const joined = await callServiceRpc(
        deps,
        "orgs",
        rpcMethods.orgs.acceptInvitation,
        { token },
        InvitationAcceptedSchema,
        websiteCaller(user, { scope: "write", client: "Hatch website" }),
        { account: false },
      );
      deps.accounts.drop(user.id);
      // The link went to that inbox: using it proves the address when it is the user's own.
      if (!user.emailVerified && joined.email?.toLowerCase() === user.email.toLowerCase())
        await deps.auth.markEmailVerified(user.id, user.email);
      const body = html`<h1>You joined ${joined.orgName}</h1>
<p>You are ${ROLE_WORDS[joined.role] ?? joined.role} of <strong>${joined.orgName}</strong>. From their next call on, your AI clients act in it.</p>
<p><a href="/dashboard/tokens">Your connected clients</a></p>`;
      return page(state, `Joined ${joined.orgName}`, body);
    } catch (error) {
      return failure(state, error);
    }
  }

  function failure(state: BrowserState, error: unknown): Response {
    if (isToolError(error)) {
      const status = httpStatusOf(error.code);
      if (error.code !== "internal") return problem(state, "Could not join", error.message, status);
    }
    deps.logger.error("invitation page failed", { error });
    return problem(state, "Something went wrong", "Something went wrong on our side. Try again in a minute.", 500);
  }

  return new Elysia({ name: "hatch-invite" })
    .get("/invite/:token", ({ request, params }) => show(request, params.token))
    .post("/invite/:token", ({ request, params }) => accept(request, params.token), { parse: "none" });
}
