import type { OrgOutput } from "@hatch/contracts";
import { csrfField, html, type SafeHtml } from "../layout.ts";
import type { AccountEntry } from "./account-choice.ts";
import { noticeOf, when, type Notice } from "./views.ts";

// /dashboard/org while the dashboard shows a personal account (the switcher's choice, or the only account a person
// has): no members, roles or invitations there, so the page says so and offers the organizations the person belongs
// to, each a button that switches the dashboard to it and comes back here (the switcher's own form).

const ROLE_WORDS: Record<string, string> = {
  owner: "the owner",
  admin: "an admin",
  manager: "a manager",
  member: "a member",
};

/** The organization page of a personal account: what it is, the person's organizations, invitations waiting. */
export function personalOrgBody(csrf: string, who: OrgOutput, organizations: AccountEntry[], notice: Notice): SafeHtml {
  const invites = who.invitationsForMe.length
    ? html`<section aria-labelledby="invitations"><h2 id="invitations">Invitations waiting for you</h2><ul>${who.invitationsForMe.map((i) => html`<li>${i.org.name} as ${i.role}, from ${i.invitedBy} (until ${when(i.expiresAt)}): open the link in the invitation mail to join.</li>`)}</ul></section>`
    : "";
  const switchTo = (org: AccountEntry) =>
    html`<li data-org="${org.id}"><form method="post" action="/dashboard/account" style="display:inline">${csrfField(csrf)}<input type="hidden" name="account" value="${org.id}"><input type="hidden" name="back" value="/dashboard/org"><button type="submit" class="link">Show ${org.name}</button></form> <span class="muted">· you are ${ROLE_WORDS[org.role] ?? org.role}</span></li>`;
  const yours = organizations.length
    ? html`<section aria-labelledby="organizations"><h2 id="organizations">Your organizations</h2>
<p>Switch to one to see its members, invitations, paused apps and activity.</p><ul>${organizations.map(switchTo)}</ul></section>`
    : html`<p>You are not in an organization. Your AI can create one for you when you ask it to, or join one through the link in an invitation mail.</p>`;
  return html`<h1>Your personal account</h1>${noticeOf(notice)}
<p>The dashboard is showing your personal account. It has no members, roles or invitations: its apps are yours alone.</p>
${yours}${invites}`;
}
