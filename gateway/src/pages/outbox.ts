import { isToolError, MailOutboxSchema, rpcMethods } from "@hatch/contracts";
import { type Bus, type Logger } from "@hatch/platform";
import { Elysia } from "elysia";
import type { Auth, BrowserState } from "../auth/index.ts";
import { html, htmlResponse, renderPage, type SafeHtml } from "./layout.ts";
import type { AccountSessions } from "../mcp/accounts.ts";
import { callServiceRpc, websiteCaller } from "../services.ts";
import { signInRedirect } from "../auth/http.ts";

/** Links into this Hatch become clickable; everything else is shown as text. */
function linkify(text: string, baseUrl: string): SafeHtml {
  const escaped = baseUrl.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const parts = text.split(new RegExp(`(${escaped}/[A-Za-z0-9/_?=.-]+)`));
  return html`${parts.map((part, i) => (i % 2 === 1 ? html`<a href="${part}">${part}</a>` : part))}`;
}

export interface OutboxPageDeps {
  auth: Auth;
  bus: Bus;
  contextKey: Buffer;
  accounts: AccountSessions;
  logger: Logger;
  baseUrl: string;
  enabled: boolean;
}

/**
 * `/dev/outbox`: the mails orgs kept because no SMTP server is configured (invitations and verification links),
 * only under `bun run dev` (config `devPages`), and only the signed-in user's own: orgs answers with mail to the
 * email of the signed context, so the links in other people's mail (credentials) are never shown; while that email is
 * unverified, only its verification mail (invitations to an address are not for whoever merely typed it).
 */
export function outboxPage(deps: OutboxPageDeps) {
  const respond = (state: BrowserState, body: SafeHtml, status = 200) => {
    const user = state.user ? { email: state.user.email, csrfToken: state.csrfToken } : null;
    return htmlResponse(renderPage({ title: "Outbox", user, body }), {
      status,
      headers: state.setCookies.map((c): [string, string] => ["Set-Cookie", c]),
    });
  };
  return new Elysia({ name: "hatch-dev-outbox" }).get("/dev/outbox", async ({ request }) => {
    if (!deps.enabled)
      return htmlResponse(renderPage({ title: "Not found", body: html`<h1>Not found</h1>` }), { status: 404 });
    const state = await deps.auth.pages.state(request);
    const user = state.user;
    if (!user) return signInRedirect("/dev/outbox", state.setCookies);
    try {
      const outbox = await callServiceRpc(
        deps,
        "orgs",
        rpcMethods.orgs.mailOutbox,
        {},
        MailOutboxSchema,
        websiteCaller(user, { scope: "read", client: "Hatch website" }),
        { account: false },
      );
      const mails = outbox.mails.map(
        (
          m,
        ) => html`<article class="card"><p><strong>${m.subject}</strong><br><span class="muted">To ${m.to} · ${m.createdAt.slice(0, 16).replace("T", " ")} UTC</span></p>
<pre style="white-space:pre-wrap">${linkify(m.body, deps.baseUrl)}</pre></article>`,
      );
      const whose = user.emailVerified
        ? html`Only mail to ${user.email} is shown.`
        : html`Only the verification mail to ${user.email} is shown until you <a href="/verify-email">verify it</a>; other mail to it waits until then.`;
      const body = !outbox.enabled
        ? html`<h1>Outbox</h1><p>Mail is sent by SMTP on this server, so nothing is kept here.</p>`
        : html`<h1>Outbox</h1><p class="muted">No mail server is configured (SMTP_URL), so mails are kept here instead of being sent.
${whose} Newest first, at most 50.</p>
${mails.length ? mails : html`<p>No mail to ${user.email} yet.</p>`}`;
      return respond(state, body);
    } catch (error) {
      if (!isToolError(error) || error.code === "internal") deps.logger.error("outbox page failed", { error });
      return respond(
        state,
        html`<h1>Outbox</h1><p class="error" role="alert">The orgs service is not answering. Try again in a minute.</p>`,
        503,
      );
    }
  });
}
