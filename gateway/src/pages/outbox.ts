import { callRpc, isToolError, MailOutboxSchema, rpcMethods, type Bus, type Logger } from "@hatch/shared";
import { Elysia } from "elysia";
import { html, htmlResponse, renderPage, type SafeHtml } from "./layout.ts";

/** Links into this Hatch become clickable; everything else is shown as text. */
function linkify(text: string, baseUrl: string): SafeHtml {
  const escaped = baseUrl.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const parts = text.split(new RegExp(`(${escaped}/[A-Za-z0-9/_-]+)`));
  return html`${parts.map((part, i) => (i % 2 === 1 ? html`<a href="${part}">${part}</a>` : part))}`;
}

/**
 * `/dev/outbox`: the mails orgs kept because no SMTP server is configured (invitations, with their links).
 * Only when the gateway runs outside production: the links in them are credentials.
 */
export function outboxPage(deps: { bus: Bus; logger: Logger; baseUrl: string; enabled: boolean }) {
  return new Elysia({ name: "hatch-dev-outbox" }).get("/dev/outbox", async () => {
    if (!deps.enabled) return htmlResponse(renderPage({ title: "Not found", body: html`<h1>Not found</h1>` }), { status: 404 });
    try {
      const outbox = await callRpc(deps.bus, "orgs", rpcMethods.orgs.mailOutbox, {}, MailOutboxSchema);
      const mails = outbox.mails.map(
        (m) => html`<article class="card"><p><strong>${m.subject}</strong><br><span class="muted">To ${m.to} · ${m.createdAt.slice(0, 16).replace("T", " ")} UTC</span></p>
<pre style="white-space:pre-wrap">${linkify(m.body, deps.baseUrl)}</pre></article>`,
      );
      const body = !outbox.enabled
        ? html`<h1>Outbox</h1><p>Mail is sent by SMTP on this server, so nothing is kept here.</p>`
        : html`<h1>Outbox</h1><p class="muted">No mail server is configured (SMTP_URL), so mails are kept here instead of being sent. Newest first, at most 50.</p>
${mails.length ? mails : html`<p>No mail yet.</p>`}`;
      return htmlResponse(renderPage({ title: "Outbox", body }));
    } catch (error) {
      if (!isToolError(error) || error.code === "internal") deps.logger.error("outbox page failed", { error });
      return htmlResponse(renderPage({ title: "Outbox", body: html`<h1>Outbox</h1><p class="error" role="alert">The orgs service is not answering. Try again in a minute.</p>` }), { status: 503 });
    }
  });
}
