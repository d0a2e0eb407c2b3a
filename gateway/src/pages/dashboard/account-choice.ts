import { rpcMethods, SessionAccountsSchema, type SessionAccounts } from "@hatch/contracts";
import { type Logger } from "@hatch/platform";
import type { BrowserState, PublicUser } from "../../auth/index.ts";
import { parseCookies, serializeCookie } from "../../auth/http.ts";
import { callServiceRpc, websiteCaller, type ServiceClientDeps } from "../../services.ts";
import { csrfField, html, type SafeHtml } from "../layout.ts";

// The dashboard's account switcher: a person belongs to their personal account and at most one organization, and
// the dashboard shows one of them at a time (the apps list, the billing page and every action's ctx follow it). The
// choice is a cookie bound to the person; it changes nothing for their AI, whose calls act as the account orgs keeps
// as active. Orgs checks that the person belongs to the chosen account (`session.resolve` with `account`), so a cookie
// naming someone else's account is only ignored.

export const ACCOUNT_COOKIE = "hatch_account";
/** A year: the choice stays until changed, and is ignored as soon as the person no longer belongs to the account. */
const MAX_AGE_SECONDS = 365 * 24 * 3600;

export type AccountEntry = SessionAccounts["accounts"][number];
/** The person of a dashboard page, with the account the switcher chose when it is not the one they act as now. */
export type DashboardUser = PublicUser & { account?: string };
/** What a page shows in the switcher: every account of the person and the one shown. */
export interface AccountView {
  accounts: AccountEntry[];
  current: AccountEntry;
}

/** The account a cookie names for this person (another person's choice in the same browser is not theirs). */
function chosen(request: Request, userId: string): string | null {
  const raw = parseCookies(request.headers.get("cookie")).get(ACCOUNT_COOKIE);
  if (!raw) return null;
  const dot = raw.lastIndexOf(".");
  return dot > 0 && raw.slice(0, dot) === userId ? raw.slice(dot + 1) : null;
}

export function accountCookie(userId: string, account: string, secure: boolean): string {
  return serializeCookie(ACCOUNT_COOKIE, `${userId}.${account}`, { secure, maxAgeSeconds: MAX_AGE_SECONDS });
}

/** Every account the person belongs to (orgs `session.accounts`). */
export async function accountsOf(deps: ServiceClientDeps, user: PublicUser): Promise<AccountEntry[]> {
  const caller = websiteCaller(user, { scope: "read", client: "dashboard" });
  const { accounts } = await callServiceRpc(
    deps,
    "orgs",
    rpcMethods.orgs.sessionAccounts,
    {},
    SessionAccountsSchema,
    caller,
    {
      account: false,
    },
  );
  return accounts;
}

/**
 * The person as this request's page acts: with the chosen account when they still belong to it and it is not the one
 * they act as anyway, and what the switcher shows.
 */
export async function actingAs(
  deps: ServiceClientDeps,
  request: Request,
  user: PublicUser,
): Promise<{ user: DashboardUser; view: AccountView }> {
  const accounts = await accountsOf(deps, user);
  const wanted = chosen(request, user.id);
  const active = accounts.find((a) => a.active) ?? accounts[0];
  const current = accounts.find((a) => a.id === wanted) ?? active;
  if (!current) throw new Error("orgs listed no account for a signed-in person");
  const acting = current.id !== active?.id ? { ...user, account: current.id } : user;
  return { user: acting, view: { accounts, current } };
}

/** The switcher's part of a page's state: the person as the chosen account acts, what it shows, where it returns. */
export interface Switched {
  user: DashboardUser;
  view?: AccountView;
  back?: string;
}

/**
 * A signed-in page's state with the account the switcher chose. When orgs cannot list the person's accounts the page
 * still works, as the account they act as, without the switcher.
 */
export async function switched<S extends BrowserState & { user: PublicUser }>(
  deps: ServiceClientDeps & { logger: Logger },
  request: Request,
  state: S,
  back: string,
): Promise<S & Switched> {
  try {
    const { user, view } = await actingAs(deps, request, state.user);
    return { ...state, user, view, back };
  } catch (error) {
    deps.logger.warn("dashboard accounts unavailable", { error: error instanceof Error ? error.name : "unknown" });
    return state;
  }
}

/** The switcher above a page's content, when its state carries one. */
/** What a page's state may carry of the switcher. */
export type SwitcherView = { view?: AccountView; back?: string };

export function switcherAbove(state: BrowserState & SwitcherView): SafeHtml | undefined {
  return state.view ? accountSwitcher(state.view, state.csrfToken, state.back ?? "/dashboard") : undefined;
}

/** How a page names an account: "your personal account" or the organization's name. */
export function accountWords(account: Pick<AccountEntry, "kind" | "name">): string {
  return account.kind === "personal" ? "your personal account" : account.name;
}

const optionLabel = (a: AccountEntry) => (a.kind === "personal" ? "Personal" : `${a.name} (organization)`);

/** The switcher at the top of every dashboard page: the account shown, and a choice of the others. */
export function accountSwitcher(view: AccountView, csrf: string, back: string): SafeHtml {
  const { accounts, current } = view;
  const label = html`<span>Showing <strong>${optionLabel(current)}</strong></span>`;
  const marks = html` data-account="${current.id}" data-account-kind="${current.kind}"`;
  if (accounts.length < 2) return html`<div class="switcher"${marks}>${label}</div>`;
  return html`<form class="switcher" method="post" action="/dashboard/account"${marks}>${csrfField(csrf)}<input type="hidden" name="back" value="${back}">
<label for="account-choice">Show the account</label> <select id="account-choice" name="account">${accounts.map((a) => html`<option value="${a.id}"${a.id === current.id ? html` selected` : ""}>${optionLabel(a)}</option>`)}</select>
<button type="submit" class="secondary">Switch</button></form>`;
}
