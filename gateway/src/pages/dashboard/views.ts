import {
  ORG_PERMISSIONS,
  type DashboardApp,
  type ListToolsOutput,
  type OrgActivityOutput,
  type OrgAppsOutput,
  type OrgMembersOutput,
  type OrgOutput,
  type Question,
  type ToolStatsOutput,
} from "@hatch/contracts";
import { renderFields, type FormValues } from "../../confirm/form.ts";
import { csrfField, html, type SafeHtml } from "../layout.ts";
import { statsChart } from "./chart.ts";
import { DASHBOARD_CLIENT } from "./calls.ts";
import { linked } from "./words.ts";

// The dashboard's HTML (no script): the list of apps, one app's page, the organization page and the confirm step.
// Every form posts with the CSRF field; every action's route calls the tool (see index.ts).

export const appPath = (address: string) => `/dashboard/apps/${encodeURIComponent(address)}`;
export const when = (iso: string) => `${iso.slice(0, 16).replace("T", " ")} UTC`;

/** What a page says after a form; `typed` keeps what the person typed in a form that was refused, by field name. */
export type Notice = { text: string; error?: boolean; typed?: Record<string, string> } | null;

export function noticeOf(notice: Notice): SafeHtml | "" {
  if (!notice) return "";
  return notice.error
    ? html`<p class="error" role="alert">${linked(notice.text)}</p>`
    : html`<p class="card" role="status">${linked(notice.text)}</p>`;
}

/** What the person typed in `field` before the form was refused (kept so they need not type it again). */
const typedIn = (notice: Notice, field: string) => (notice?.error ? (notice.typed?.[field] ?? "") : "");

/** The banner of a person whose email is not verified yet: what waits on it, and where to get the link again. */
export function unverifiedBanner(email: string): SafeHtml {
  return html`<div class="error" role="status" data-unverified><p style="margin:.2rem 0"><strong>Verify your email.</strong> ${email} is not verified yet, so apps shared with that address and invitations to it do not reach you. Open the link in the mail we sent, or <a href="/verify-email">send it again</a>.</p></div>`;
}

export const VISIBILITY: Record<string, string> = {
  private: "Private: only you",
  org: "Organization: everyone in it",
  people: "People: you and the people you add",
  public: "Public: anyone with the link",
};
const visibilityWord = (v: string) => VISIBILITY[v]?.split(":")[0] ?? v;

type ListedApp = ListToolsOutput["apps"][number];

export function appCard(app: ListedApp): SafeHtml {
  const version = app.currentVersion === null ? "nothing published yet" : `version ${app.currentVersion}`;
  const owner = app.sharedWithMe
    ? html`<p class="muted">Shared with you by ${app.owner.name} (${app.owner.email})</p>`
    : "";
  const paused = app.paused ? html` · <strong>paused by the organization</strong>` : "";
  const title = app.sharedWithMe ? html`${app.name}` : html`<a href="${appPath(app.address)}">${app.name}</a>`;
  const manage = app.sharedWithMe ? "" : html`<a href="${appPath(app.address)}">Manage</a>`;
  return html`<article class="card" data-address="${app.address}"><h3 style="margin:0 0 .4rem">${title}</h3>${owner}
<p style="margin:.3rem 0"><a class="url" href="${app.url}">${app.url}</a></p>
<p class="muted" style="margin:.3rem 0">Address <strong>${app.address}</strong> · ${visibilityWord(app.visibility)} · ${app.opens7d} opens in 7 days · ${version} · last publish ${when(app.updatedAt)}${paused}</p>
<div class="actions" style="margin-top:.5rem"><a class="button" href="${app.url}" rel="noopener">Open ${app.name}</a>${manage}</div></article>`;
}

/** A public app the person let learn who they are (their yes on the app sign-in's consent page). */
export interface ConsentRow {
  appId: string;
  address: string;
  appName: string;
  ownerName: string;
  since: Date;
}

function consentsSection(csrf: string, consents: ConsentRow[]): SafeHtml {
  const row = (c: ConsentRow) =>
    html`<li class="card" data-consent="${c.address}"><strong>${c.appName || c.address}</strong> <span class="muted">(${c.address}) by ${c.ownerName || "someone else"} · since ${when(c.since.toISOString())}</span>
<form method="post" action="/dashboard/consents/remove" style="display:inline">${csrfField(csrf)}<input type="hidden" name="appId" value="${c.appId}"> <button type="submit" class="link">Remove ${c.appName || c.address}</button></form></li>`;
  return html`<section aria-labelledby="consents"><h2 id="consents">Apps that know who you are</h2>
<p class="muted">These apps by other people learn your name and email when you sign in to them. Remove one and it no longer sees who you are (it keeps what it already stored); it asks again the next time you sign in to it.</p>
${consents.length ? html`<ul style="list-style:none;padding:0">${consents.map(row)}</ul>` : html`<p class="muted">None yet.</p>`}</section>`;
}

export function appsListBody(
  apps: ListToolsOutput["apps"],
  notice: Notice,
  csrf: string,
  consents: ConsentRow[],
  unverifiedEmail: string | null = null,
  account?: { kind: "personal" | "company"; name: string },
): SafeHtml {
  // An app of the person's other account (personal or organization) is listed when that account is shown.
  const mine = apps.filter((a) => !a.sharedWithMe && a.inAccount !== false);
  const elsewhere = apps.filter((a) => !a.sharedWithMe && a.inAccount === false).length;
  const shared = apps.filter((a) => a.sharedWithMe);
  const empty = html`<p class="muted">No apps yet. Your AI publishes them for you once it is connected: see <a href="/mcp">how to connect it</a>.</p>`;
  const heading = !account
    ? "Yours"
    : account.kind === "personal"
      ? "Your personal apps"
      : `Your apps in ${account.name}`;
  const other = elsewhere
    ? html`<p class="muted" data-elsewhere="${elsewhere}">${elsewhere === 1 ? "1 more app of yours is" : `${elsewhere} more apps of yours are`} in your ${account?.kind === "personal" ? "organization" : "personal account"}: switch the account above to see ${elsewhere === 1 ? "it" : "them"}.</p>`
    : "";
  return html`<h1>Your apps</h1>${unverifiedEmail ? unverifiedBanner(unverifiedEmail) : ""}${noticeOf(notice)}
<section aria-labelledby="mine"><h2 id="mine">${heading}</h2>${mine.length ? mine.map(appCard) : empty}${other}</section>
<section aria-labelledby="shared"><h2 id="shared">Shared with you</h2>${shared.length ? shared.map(appCard) : html`<p class="muted">Nobody has shared an app with you yet.</p>`}</section>
${consentsSection(csrf, consents)}`;
}

/** An app's opens and unique viewers per day, and the totals in words (the app's page and the statistics view). */
export function statsFigure(stats: ToolStatsOutput): SafeHtml {
  return html`${statsChart(stats.days)}<p>${stats.totalOpens} opens and ${stats.totalUniqueViewers} unique viewers in the last ${stats.days.length} days.</p>`;
}

export function appBody(
  csrf: string,
  app: DashboardApp,
  stats: ToolStatsOutput | null,
  notice: Notice,
  typed = "",
): SafeHtml {
  const path = appPath(app.address);
  const form = (action: string, inner: SafeHtml, attrs: SafeHtml | "" = "") =>
    html`<form method="post" action="${path}/${action}"${attrs}>${csrfField(csrf)}${inner}</form>`;

  const chart = stats ? statsFigure(stats) : html`<p class="muted">Statistics are not available right now.</p>`;

  const versions = app.versions.length
    ? html`<ul class="versions" style="list-style:none;padding:0">${app.versions.map(
        (v) =>
          html`<li class="card" data-version="${v.version}"><strong><a href="${path}/versions/${v.version}">Version ${v.version}</a></strong>${v.current ? html` (current)` : ""}
<span class="muted"> · ${when(v.publishedAt)} by ${v.publishedBy}${v.publishedVia ? ` ${clientWords(v.publishedVia)}` : ""} · ${v.fileCount} files</span>
${v.current ? "" : form("rollback", html`<input type="hidden" name="version" value="${v.version}"><button type="submit" class="secondary">Roll back to version ${v.version}</button>`, html` class="actions"`)}</li>`,
      )}</ul>`
    : html`<p class="muted">Nothing published yet.</p>`;

  const radios = Object.entries(VISIBILITY).map(
    ([value, label]) =>
      html`<label class="choice"><input type="radio" name="visibility" value="${value}"${app.visibility === value ? html` checked` : ""}> ${label}</label>`,
  );
  const people = app.people.length
    ? html`<ul>${app.people.map(
        (email) =>
          html`<li>${email} ${form("share", html`<input type="hidden" name="remove" value="${email}"><button type="submit" class="link">Remove ${email}</button>`, html` style="display:inline"`)}</li>`,
      )}</ul>`
    : html`<p class="muted">Not shared with anyone by email.</p>`;
  const sharing = html`${form(
    "share",
    html`<fieldset><legend>Who can open it</legend>${radios}</fieldset>
<label class="choice"><input type="checkbox" name="aiDiscoverable" value="true"${app.aiDiscoverable ? html` checked` : ""}> AI assistants may find and recommend it (public apps only)</label>
<input type="hidden" name="settings" value="1"><div class="actions"><button type="submit">Save sharing</button></div>`,
    html` class="stack"`,
  )}
<h3>People</h3>${people}
${form("share", html`<label>Add a person by email<input type="email" name="add" required autocomplete="off" value="${typedIn(notice, "add")}"></label><div class="actions"><button type="submit">Share with this person</button></div>`, html` class="stack"`)}
<p class="muted">They sign in with that email to open it. Making an app public asks you to confirm first.</p>`;

  const secrets = app.secrets.length
    ? html`<li>Secrets: ${app.secrets.map(
        (s, i) =>
          html`${i ? ", " : ""}<a href="${path}/secrets/${encodeURIComponent(s.name)}">${s.name}</a>${s.isSet ? "" : " (not set)"}`,
      )}</li>`
    : "";
  const places = html`<ul>${secrets}
<li><a href="/dashboard/ai-keys?scope=tool&amp;app=${encodeURIComponent(app.address)}">AI key for this app</a></li>
<li><a href="${path}/domains">Domains</a></li>
<li><a href="${path}/logs">Logs</a> of its server code</li>
<li><a href="${path}/data">Data</a> its users stored</li></ul>`;

  const paused = app.paused
    ? html`<p class="error" role="alert">Your organization paused this app: visitors get an error until a manager unpauses it.</p>`
    : "";
  const version = app.currentVersion === null ? "nothing published yet" : `version ${app.currentVersion}`;
  return html`<p><a href="/dashboard">← All apps</a></p><h1>${app.name}</h1>${noticeOf(notice)}${paused}
<div class="card"><p style="margin-top:0"><a class="url" href="${app.url}">${app.url}</a></p>
<p class="muted">Address <strong>${app.address}</strong> · ${visibilityWord(app.visibility)} · ${version} · last publish ${when(app.updatedAt)}</p>
<div class="actions"><a class="button" href="${app.url}" rel="noopener">Open ${app.name}</a></div></div>
<section aria-labelledby="stats"><h2 id="stats">Statistics</h2>${chart}</section>
<section aria-labelledby="versions"><h2 id="versions">Versions</h2>${versions}</section>
<section aria-labelledby="sharing"><h2 id="sharing">Sharing</h2>${sharing}</section>
<section aria-labelledby="more"><h2 id="more">More</h2>${places}</section>
<section aria-labelledby="delete"><h2 id="delete">Delete</h2>
<p>Deleting removes the app with all its versions, data, files, logs and secrets. It cannot be undone, and the address can never be used again.</p>
${form("delete", html`<label>Type <strong>${app.address}</strong> to confirm<input type="text" name="typed" value="${typed}" autocomplete="off" spellcheck="false" required></label><div class="actions"><button type="submit" class="danger">Delete ${app.address}</button></div>`, html` class="stack"`)}</section>`;
}

/** Where an activity entry came from, in words: "on the dashboard", "via Claude Code", or nothing. */
export function clientWords(client: { kind: string; name: string } | null): string {
  if (!client) return "";
  if (client.kind === DASHBOARD_CLIENT.kind && client.name === DASHBOARD_CLIENT.name) return "on the dashboard";
  return `via ${client.name}`;
}

/** The `org` tool's answer for an organization (a personal account's page is org-personal.ts). */
export type OrgShown = OrgOutput & { org: NonNullable<OrgOutput["org"]> };

export interface OrgPageData {
  org: OrgShown;
  members: OrgMembersOutput | null;
  paused: OrgAppsOutput["apps"];
  activity: OrgActivityOutput | null;
  me: string;
}

const ROLES = ["member", "manager", "admin"] as const;

/** Each extra permission in words (the contract's names are for tools). */
export const PERMISSION_WORDS: Record<(typeof ORG_PERMISSIONS)[number], string> = {
  publish: "publish apps",
  share_public: "make apps public",
  custom_domains: "connect domains",
  buy_domains: "buy domains",
  company_ai_key: "set the organization's AI key",
  billing: "manage billing",
};
const permissionWords = (list: readonly string[]) =>
  list.map((p) => PERMISSION_WORDS[p as keyof typeof PERMISSION_WORDS] ?? p).join(", ");
const RANK: Record<string, number> = { member: 0, manager: 1, admin: 2, owner: 3 };

/** The roles a person of role `mine` may give: at most their own, never owner (orgs checks it again). */
export const rolesGivenBy = (mine: string | null) =>
  ROLES.filter((r) => mine !== null && RANK[r]! <= (RANK[mine] ?? -1));

export function orgBody(csrf: string, data: OrgPageData, notice: Notice): SafeHtml {
  const { org } = data;
  const post = (action: string, inner: SafeHtml, attrs: SafeHtml | "" = "") =>
    html`<form method="post" action="/dashboard/org/${action}"${attrs}>${csrfField(csrf)}${inner}</form>`;
  const can = org.can;
  const roleSelect = (name: string, selected: string) =>
    html`<select name="${name}">${rolesGivenBy(org.role).map((r) => html`<option value="${r}"${r === selected ? html` selected` : ""}>${r}</option>`)}</select>`;
  const members = data.members?.members ?? [];
  const others = (email: string) => members.filter((m) => m.email !== email);
  const memberRow = (m: OrgMembersOutput["members"][number]) => {
    const manageable = can.manageMembers && m.role !== "owner" && m.email !== data.me;
    const boxes = ORG_PERMISSIONS.filter((p) => org.permissions.includes(p)).map(
      (p) =>
        html`<label class="choice"><input type="checkbox" name="permission.${p}" value="1"${m.permissions.includes(p) ? html` checked` : ""}> ${PERMISSION_WORDS[p]}</label>`,
    );
    const kept = m.permissions.filter((p) => !org.permissions.includes(p));
    const actions = manageable
      ? html`<div class="actions">${post(
          "members/update",
          html`<input type="hidden" name="email" value="${m.email}"><label class="choice">Role ${roleSelect("role", m.role)}</label>
<fieldset><legend>May also (on top of the role)</legend>${boxes}${kept.map((p) => html`<input type="hidden" name="permission.${p}" value="1">`)}</fieldset> <button type="submit" class="secondary">Change role of ${m.email}</button>`,
          html` class="stack"`,
        )}
${post("members/remove", html`<input type="hidden" name="email" value="${m.email}"><label class="choice">Their apps go to <select name="appsRecipient">${others(m.email).map((o) => html`<option value="${o.email}"${o.email === data.me ? html` selected` : ""}>${o.email}</option>`)}</select></label> <button type="submit" class="danger">Remove ${m.email}</button>`)}</div>`
      : "";
    return html`<li class="card" data-member="${m.email}"><strong>${m.name}</strong> (${m.email}) · ${m.role}${m.permissions.length ? ` · may ${permissionWords(m.permissions)}` : ""} <span class="muted">· joined ${when(m.joinedAt)}</span>${actions}</li>`;
  };
  const invitations = data.members?.invitations ?? [];
  const invitationRow = (i: OrgMembersOutput["invitations"][number]) =>
    html`<li data-invitation="${i.email}">${i.email} as ${i.role} <span class="muted">· from ${i.invitedBy}, ${i.status === "expired" ? "expired" : `until ${when(i.expiresAt)}`}</span>
${can.invite ? post("invitations/revoke", html`<input type="hidden" name="email" value="${i.email}"><button type="submit" class="link">Revoke the invitation of ${i.email}</button>`, html` style="display:inline"`) : ""}</li>`;
  const inviteForm = can.invite
    ? post(
        "invite",
        html`<label>Emails (separated by commas or spaces)<input type="text" name="emails" required autocomplete="off" value="${typedIn(notice, "emails")}"></label>
<label>Role ${roleSelect("role", "member")}</label><div class="actions"><button type="submit">Send invitations</button></div>`,
        html` class="stack"`,
      )
    : "";
  const pausedRow = (a: OrgAppsOutput["apps"][number]) =>
    html`<li data-paused="${a.address}"><strong>${a.name}</strong> (${a.address}) of ${a.owner.email}
${can.pauseApps ? post("apps/pause", html`<input type="hidden" name="address" value="${a.address}"><input type="hidden" name="paused" value="false"><button type="submit" class="link">Unpause ${a.address}</button>`, html` style="display:inline"`) : ""}</li>`;
  const pauseForm = can.pauseApps
    ? post(
        "apps/pause",
        html`<label>Pause an app by address<input type="text" name="address" required autocomplete="off" value="${typedIn(notice, "address")}"></label><label>Why (for the log and its owner)<input type="text" name="reason" maxlength="500" value="${typedIn(notice, "reason")}"></label><input type="hidden" name="paused" value="true"><div class="actions"><button type="submit" class="secondary">Pause</button></div>`,
        html` class="stack"`,
      )
    : "";
  const activity = data.activity
    ? data.activity.entries.length
      ? html`<ol class="activity" style="padding-left:1.2rem">${data.activity.entries.map((e) => {
          const where = clientWords(e.client);
          return html`<li><span class="muted">${when(e.date)}</span> ${e.summary}${where ? html` <em>(${where})</em>` : ""}</li>`;
        })}</ol>${data.activity.hasMore ? html`<p class="muted">Showing the latest ${data.activity.entries.length} entries; your AI can look further back by date.</p>` : ""}`
      : html`<p class="muted">Nothing yet.</p>`
    : "";
  return html`<h1>${org.org.name}</h1>${noticeOf(notice)}
<p class="muted">You are ${org.role}${org.permissions.length ? ` (you may ${permissionWords(org.permissions)})` : ""}. Owner: ${org.org.owner.name} (${org.org.owner.email}) · ${org.org.memberCount} members.</p>
<section aria-labelledby="members"><h2 id="members">Members</h2><ul style="list-style:none;padding:0">${members.map(memberRow)}</ul></section>
<section aria-labelledby="invitations"><h2 id="invitations">Invitations</h2>${invitations.length ? html`<ul>${invitations.map(invitationRow)}</ul>` : html`<p class="muted">No pending invitations.</p>`}${inviteForm}</section>
<section aria-labelledby="paused"><h2 id="paused">Paused apps</h2>${data.paused.length ? html`<ul>${data.paused.map(pausedRow)}</ul>` : html`<p class="muted">No app is paused.</p>`}${pauseForm}</section>
${data.activity ? html`<section aria-labelledby="activity"><h2 id="activity">Activity</h2>${activity}</section>` : ""}`;
}

/**
 * The confirm step of an action whose tool asked (making an app public, removing a member, sending invitations): the
 * service's own question, its fields, and a button that sends the same input again with the answer.
 */
export function askBody(
  csrf: string,
  ask: { tool: string; input: unknown; back: string; question: Question; values?: FormValues; error?: string },
  destructive: boolean,
  action: string,
): SafeHtml {
  const error = ask.error ? html`<p class="error" role="alert">${ask.error}</p>` : "";
  return html`<h1>Please confirm</h1><div class="card"><p><strong>${ask.question.message}</strong></p>
<p class="muted">Nothing happens unless you confirm.</p></div>${error}
<form class="stack" method="post" action="/dashboard/confirm">${csrfField(csrf)}
<input type="hidden" name="tool" value="${ask.tool}"><input type="hidden" name="input" value="${JSON.stringify(ask.input)}"><input type="hidden" name="back" value="${ask.back}">
${renderFields(ask.question.schema, ask.values ?? null)}
<div class="actions"><button type="submit" name="action" value="confirm"${destructive ? html` class="danger"` : ""}>${action}</button>
<a href="${ask.back}">Cancel</a></div></form>`;
}
