import { csrfField, html, renderPage } from "../pages/layout.ts";
import { renderFields, soleBoolean, type FormValues } from "./form.ts";
import type { PendingConfirmation } from "./store.ts";

/** The signed-in person looking at the page; every confirm page needs one. */
export interface ConfirmViewer {
  user: { email: string };
  csrfToken: string;
}

const nav = (v: ConfirmViewer) => ({ email: v.user.email, csrfToken: v.csrfToken });
const when = (d: Date) => `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`;

/**
 * What the Confirm button says: the action itself. A yes/no question's field title names it ("Yes, delete my-todo"
 * becomes "Delete my-todo"); a purchase names the domain; anything else stays "Confirm".
 */
export function actionLabel(pending: Pick<PendingConfirmation, "schema" | "tool" | "input">): string {
  const sole = soleBoolean(pending.schema);
  const title = sole ? pending.schema.properties[sole]?.title?.trim() : undefined;
  if (title) {
    const action = title.replace(/^yes,\s*/i, "");
    if (action) return action.charAt(0).toUpperCase() + action.slice(1);
  }
  const input = (pending.input ?? {}) as Record<string, unknown>;
  if (pending.tool === "buy_domain" && typeof input.domain === "string") return `Buy ${input.domain}`;
  if (pending.tool === "org_member_update" && typeof input.email === "string") return `Remove ${input.email}`;
  return "Confirm";
}

export function confirmPage(
  viewer: ConfirmViewer,
  pending: PendingConfirmation,
  options: { destructive: boolean; clientName: string; values?: FormValues; error?: string },
): string {
  const error = options.error ? html`<p class="error" role="alert">${options.error}</p>` : "";
  const body = html`<h1>Confirm with Hatch</h1>
<div class="card"><p class="muted">${options.clientName}, the AI client you connected, asks you, ${viewer.user.email}:</p>
<p><strong>${pending.message}</strong></p>
<p class="muted">Nothing happens unless you confirm. This link works once, until ${when(pending.expiresAt)}.</p></div>${error}
<form class="stack" method="post" action="/confirm/${pending.id}">${csrfField(viewer.csrfToken)}${renderFields(pending.schema, options.values ?? null)}
<div class="actions"><button type="submit" name="action" value="confirm"${options.destructive ? html` class="danger"` : ""}>${actionLabel(pending)}</button>
<button type="submit" name="action" value="cancel" class="secondary" formnovalidate>Cancel</button></div></form>`;
  return renderPage({ title: "Confirm", user: nav(viewer), body });
}

/** After the user answered: what the service said (done, or why not), or that nothing changed. */
export function outcomePage(viewer: ConfirmViewer, outcome: { title: string; message: string; ok: boolean }): string {
  const message = outcome.ok
    ? html`<p role="status">${outcome.message}</p>`
    : html`<p class="error" role="alert">${outcome.message}</p>`;
  const body = html`<h1>${outcome.title}</h1>${message}<p class="muted">You can close this tab and tell your AI you are done.</p>`;
  return renderPage({ title: outcome.title, user: nav(viewer), body });
}

export type Unavailable = "unknown" | "expired" | "confirmed" | "cancelled" | "revoked" | "read_only";

/** Why a confirmation cannot be answered; "unknown" says nothing about whether the id exists for someone else. */
export function unavailablePage(viewer: ConfirmViewer, reason: Unavailable, result: string | null = null): string {
  const { title, message } = unavailableText(reason);
  const earlier = reason === "confirmed" && result ? html`<p>What happened then:</p><p class="card">${result}</p>` : "";
  const body = html`<h1>${title}</h1><p class="error" role="alert">${message}</p>${earlier}<p><a href="/">Back to Hatch</a></p>`;
  return renderPage({ title, user: nav(viewer), body });
}

function unavailableText(reason: Unavailable): { title: string; message: string } {
  switch (reason) {
    case "unknown":
      return {
        title: "Link not valid",
        message:
          "This confirmation link is not valid for your account. Check that you are signed in as the person your AI acts for, or ask your AI for a new link.",
      };
    case "expired":
      return {
        title: "Link expired",
        message:
          "This confirmation has expired. Nothing was changed. Ask your AI to try again; it will give you a new link.",
      };
    case "confirmed":
      return { title: "Already confirmed", message: "This was already confirmed; a confirmation link works once." };
    case "cancelled":
      return {
        title: "Cancelled",
        message: "This was cancelled, so nothing was changed. Ask your AI to try again if you changed your mind.",
      };
    case "revoked":
      return {
        title: "Request withdrawn",
        message:
          "This request was withdrawn: the AI client that asked for it has been disconnected from your account (on the Connected clients page, or by a password reset), so it cannot act for you. Nothing was changed. Connect the client again and ask it again if you still want this.",
      };
    case "read_only":
      return {
        title: "Read-only connection",
        message:
          "The AI client that asked for this was approved for read-only access, so it cannot make changes. Nothing was changed.",
      };
  }
}
