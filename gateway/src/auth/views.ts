import { csrfField, html, renderPage, withNext, type SafeHtml } from "../pages/layout.ts";
import type { AuthorizeRequest } from "./authorize-request.ts";
import { SIGN_IN_RULE } from "./throttle.ts";
import type { ConnectedClient } from "./grants.ts";
import type { PendingClient } from "./pending-authorization.ts";
import type { PublicUser } from "./users.ts";

type Viewer = { user: PublicUser | null; csrfToken: string };

const navUser = (v: Viewer) => (v.user ? { email: v.user.email, csrfToken: v.csrfToken } : null);
const errorBox = (message: string | SafeHtml | undefined) =>
  message ? html`<p class="error" role="alert">${message}</p>` : "";
const nextField = (next: string) => html`<input type="hidden" name="next" value="${next}">`;

export function errorPage(viewer: Viewer, title: string, message: string): string {
  return renderPage({
    title,
    user: navUser(viewer),
    body: html`<h1>${title}</h1><p class="error" role="alert">${message}</p><p><a href="/">Back to Hatch</a></p>`,
  });
}

/** What a sign-in or sign-up form shows: where it leads, the client waiting for it, what was typed, what went wrong. */
export interface AccountForm {
  next: string;
  client?: PendingClient | null;
  email?: string;
  name?: string;
  error?: string | SafeHtml;
}

/** "Sign in to connect X to Hatch" when an authorization waits for this form; `plain` otherwise. */
function heading(verb: string, form: AccountForm, plain: string): SafeHtml {
  if (!form.client) return html`<h1>${plain}</h1>`;
  const by = form.client.publishedBy ? html` <span class="muted">(published by ${form.client.publishedBy})</span>` : "";
  return html`<h1>${verb} to connect ${form.client.name} to Hatch</h1>
<p class="muted">${form.client.name}${by} asked to use your Hatch account. After this you choose what it may do.</p>`;
}

const titleOf = (verb: string, form: AccountForm) => (form.client ? `${verb} to connect ${form.client.name}` : verb);

export function signInPage(viewer: Viewer, form: AccountForm): string {
  const next = form.next;
  const body = html`${heading("Sign in", form, "Sign in")}${errorBox(form.error)}
<form class="stack" method="post" action="/signin">${csrfField(viewer.csrfToken)}${nextField(next)}
<label>Email <input type="email" name="email" autocomplete="email" required value="${form.email ?? ""}"></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button></form>
<p><a href="${withNext("/forgot-password", next)}">Forgot your password?</a></p>
<p class="muted">${SIGN_IN_RULE}</p>
<p class="muted">No account yet? <a href="${withNext("/signup", next)}">Sign up</a></p>`;
  return renderPage({ title: titleOf("Sign in", form), user: navUser(viewer), body, next });
}

export function signUpPage(viewer: Viewer, form: AccountForm): string {
  const next = form.next;
  const body = html`${heading("Sign up", form, "Create your Hatch account")}${errorBox(form.error)}
<form class="stack" method="post" action="/signup">${csrfField(viewer.csrfToken)}${nextField(next)}
<label>Name <input type="text" name="name" autocomplete="name" required maxlength="100" value="${form.name ?? ""}"></label>
<label>Email <input type="email" name="email" autocomplete="email" required value="${form.email ?? ""}"></label>
<label>Password <input type="password" name="password" autocomplete="new-password" required minlength="8"></label>
<button type="submit">Sign up</button></form>
<p class="muted">Already have an account? <a href="${withNext("/signin", next)}">Sign in</a></p>`;
  return renderPage({ title: titleOf("Sign up", form), user: navUser(viewer), body, next });
}

/** The sign-up error for a taken email, with "Sign in instead" as a link that keeps the pending authorization. */
export function emailTakenError(next: string, email: string): SafeHtml {
  return html`An account with this email already exists. <a href="${withNext("/signin", next, { email })}">Sign in instead</a>.`;
}

/** Where the browser goes after approval, said plainly: the host for web URLs, the app scheme for native apps. */
function destination(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.protocol === "http:" || url.protocol === "https:" ? url.host : `${url.protocol}//${url.host}`;
}

function consentHiddenFields(request: AuthorizeRequest): SafeHtml {
  const fields: Record<string, string | undefined> = {
    response_type: "code",
    client_id: request.client.clientId,
    redirect_uri: request.redirectUri,
    code_challenge: request.codeChallenge,
    code_challenge_method: "S256",
    resource: request.resource,
    scope: request.scope === "read" ? "read" : "read write",
    state: request.state,
  };
  return html`${Object.entries(fields).map(([name, value]) => (value === undefined ? "" : html`<input type="hidden" name="${name}" value="${value}">`))}`;
}

export function consentPage(viewer: Viewer & { user: PublicUser }, request: AuthorizeRequest): string {
  const { client } = request;
  const vouchedBy =
    client.registration === "metadata"
      ? html` <span class="muted">(published by ${new URL(client.clientId).host})</span>`
      : "";
  const fullButton =
    request.scope === "write"
      ? html`<button type="submit" name="decision" value="write">Allow full access</button>`
      : "";
  const body = html`<h1>Connect ${client.name}?</h1>
<div class="card"><p><strong>${client.name}</strong>${vouchedBy} wants to use Hatch as <strong>${viewer.user.email}</strong>.</p>
<p>After you answer, you will be sent to <strong>${destination(request.redirectUri)}</strong><br><code>${request.redirectUri}</code></p>
<p class="muted">Full access lets it publish, change and delete your apps. Read-only access lets it look, never change.
You can disconnect it at any time on the Connected clients page.</p></div>
<form method="post" action="/oauth/authorize">${csrfField(viewer.csrfToken)}${consentHiddenFields(request)}
<div class="actions">${fullButton}
<button type="submit" name="decision" value="read" class="${request.scope === "write" ? "secondary" : ""}">Allow read-only</button>
<button type="submit" name="decision" value="deny" class="danger">Deny</button></div></form>`;
  return renderPage({ title: `Connect ${client.name}`, user: navUser(viewer), body });
}

const when = (d: Date | null) => (d ? `${d.toISOString().slice(0, 16).replace("T", " ")} UTC` : "never");

/** The host a client id names: a metadata client's id is a URL; a registered client's id is ours, said as such. */
export function clientIdHost(c: { clientId: string; registration: string }): string {
  if (c.registration === "metadata" && URL.canParse(c.clientId)) return new URL(c.clientId).host;
  return c.registration === "builtin" ? "built into Hatch" : `registered here (${c.clientId})`;
}

const redirectHost = (uri: string | null) => (uri && URL.canParse(uri) ? destination(uri) : "not recorded");

function clientFacts(c: ConnectedClient): SafeHtml {
  return html`<strong>${c.clientName}</strong><br><span class="muted">Client ID: ${clientIdHost(c)}<br>Returns to: ${redirectHost(c.redirectUri)}</span>`;
}

export function tokensPage(viewer: Viewer & { user: PublicUser }, clients: ConnectedClient[], notice?: string): string {
  const rows = clients.map(
    (c) => html`<tr><td>${clientFacts(c)}</td><td>${c.scope === "read" ? "Read-only" : "Full access"}</td>
<td>${when(c.createdAt)}</td><td>${when(c.lastUsedAt)}</td>
<td><a class="button" href="/dashboard/tokens/revoke?grant=${encodeURIComponent(c.grantId)}" aria-label="Revoke ${c.clientName}">Revoke</a></td></tr>`,
  );
  const table = clients.length
    ? html`<table><thead><tr><th>Client</th><th>Access</th><th>Connected</th><th>Last used</th><th>Action</th></tr></thead><tbody>${rows}</tbody></table>`
    : html`<p class="muted">No AI client is connected. Add Hatch to your AI client with the URL of its MCP endpoint and sign in when asked.</p>`;
  const done = notice ? html`<p class="card" role="status">${notice}</p>` : "";
  const body = html`<h1>Connected clients</h1>${done}<p>AI clients connected to your account, one row per client. Revoking one stops it on its next call.</p>${table}`;
  return renderPage({ title: "Connected clients", user: navUser(viewer), body, section: "clients" });
}

/** The question before a revoke: what is disconnected and what that means; the form does it. */
export function revokePage(viewer: Viewer & { user: PublicUser }, c: ConnectedClient): string {
  const body = html`<h1>Revoke ${c.clientName}?</h1>
<div class="card"><p>${clientFacts(c)}</p>
<p>${c.clientName} will be refused on its next call, and questions it left for you to confirm are withdrawn. It can
connect again only if you sign in and approve it again.</p></div>
<form method="post" action="/dashboard/tokens/revoke">${csrfField(viewer.csrfToken)}<input type="hidden" name="grant_id" value="${c.grantId}">
<div class="actions"><button type="submit" class="danger">Revoke ${c.clientName}</button> <a href="/dashboard/tokens">Keep it connected</a></div></form>`;
  return renderPage({ title: `Revoke ${c.clientName}`, user: navUser(viewer), body, section: "clients" });
}
