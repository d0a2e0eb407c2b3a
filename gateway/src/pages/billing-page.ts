import {
  BillingLinkSchema,
  BillingSettingsSchema,
  httpStatusOf,
  isToolError,
  LocalActResultSchema,
  MAX_SEATS,
  PLAN_TABLE,
  ReceiptsSchema,
  rpcMethods,
  type Receipts,
  type BillingSettings,
  type LocalActInput,
} from "@hatch/contracts";
import { callRpc, type Bus, type Logger } from "@hatch/platform";
import { Elysia } from "elysia";
import { cookieHeaders, type Auth, type BrowserState, type Params } from "../auth/index.ts";
import { redirect, signInRedirect } from "../auth/http.ts";
import type { AccountSessions } from "../mcp/accounts.ts";
import { dashboardContext, readDashboardForm } from "./dashboard-context.ts";
import { accountWords, switched, switcherAbove, type Switched } from "./dashboard/account-choice.ts";
import { csrfField, html, htmlResponse, renderPage, type SafeHtml } from "./layout.ts";

// `/dashboard/billing`: the plans (PLAN_TABLE), the account's plan, state, card and usage, and buttons that lead to
// the provider's checkout or portal. Without Stripe, the checkout and portal are the local pages below. The local
// checkout's card number is compared here with the test card and dropped: billing hears only "ok" or "declined",
// and the number is never logged, stored, or echoed back into the page.

export interface BillingPagesDeps {
  auth: Pick<Auth, "pages">;
  bus: Bus;
  contextKey: Buffer;
  accounts: AccountSessions;
  logger: Logger;
}

const FORM_MAX_BYTES = 8 * 1024;
const TEST_CARD = "4242424242424242";
const SETTINGS = "/dashboard/billing";
/** The person as the page acts (the account the dashboard's switcher chose) and what the switcher shows. */
type Signed = BrowserState & Switched;
type Form = { params: Params; state: BrowserState };
/** What a page reads of its query (or of the form posted back to it). */
type Query = { get(name: string): string | null | undefined };

function page(state: Signed | BrowserState, title: string, body: SafeHtml, status = 200): Response {
  const user = state.user ? { email: state.user.email, csrfToken: state.csrfToken } : null;
  const above = switcherAbove(state);
  return htmlResponse(renderPage({ title, user, body, section: "billing", above }), {
    status,
    headers: cookieHeaders(state.setCookies),
  });
}

const notice = (text: string | undefined, error = false) =>
  text
    ? error
      ? html`<p class="error" role="alert">${text}</p>`
      : html`<p class="card" role="status">${text}</p>`
    : "";

const price = (plan: keyof typeof PLAN_TABLE) => {
  const info = PLAN_TABLE[plan];
  return info.monthlyCents === null
    ? "by agreement"
    : `$${(info.monthlyCents / 100).toFixed(0)}/month${info.perSeat ? " per seat" : ""}`;
};
const gb = (bytes: number | null) => (bytes === null ? "no limit" : `${+(bytes / 1024 ** 3).toFixed(1)} GB`);
const n = (value: number | null) => (value === null ? "no limit" : String(value));
const choosable = (s: BillingSettings) => (s.accountKind === "company" ? (["team"] as const) : (["pro"] as const));
const people = (p: (typeof PLAN_TABLE)[keyof typeof PLAN_TABLE]) =>
  p.perSeat ? "seats paid for" : p.accounts.includes("company") ? n(p.limits.seats) : "1 (you)";
/** The seats a form fills in: those asked for in the link (?seats=), else the people the organization has now. */
const seatsWanted = (s: BillingSettings, query: Query | null) => {
  const asked = Number(query?.get("seats"));
  return Number.isInteger(asked) && asked >= 1 && asked <= MAX_SEATS ? asked : Math.max(1, s.seatsUsed ?? s.seats);
};
const seatsField = (value: number) =>
  html`<label>Seats (a member or an open invitation each)<input type="number" name="seats" min="1" max="${String(MAX_SEATS)}" step="1" value="${String(value)}" required></label>`;
const seatsLine = (s: BillingSettings) =>
  s.seatsUsed === null
    ? ""
    : html`<p>People: <strong id="seats-used">${String(s.seatsUsed)}</strong> (members and open invitations)${PLAN_TABLE[s.plan].perSeat ? html` · seats paid: <strong id="seats">${String(s.seats)}</strong>` : ""}</p>`;

/** "$12", "$2,000": whole dollars as a price says them. */
const dollars = (cents: number) => `$${(cents / 100).toLocaleString("en-US", { maximumFractionDigits: 2 })}`;

/** What a checkout button pays: "Pay $12 a month", "Pay $60 a month for 3 seats". */
export function payWords(plan: "pro" | "team", seats = 1): string {
  const info = PLAN_TABLE[plan];
  const cents = (info.monthlyCents ?? 0) * (info.perSeat ? seats : 1);
  return `Pay ${dollars(cents)} a month${info.perSeat ? ` for ${seats} ${seats === 1 ? "seat" : "seats"}` : ""}`;
}

const STATE_WORDS: Record<BillingSettings["state"], string> = {
  active: "It is active and paid up.",
  trialing: "It is in its trial.",
  past_due: "The last payment failed: the paid features stay for now, but fix the card soon.",
  suspended: "It is suspended until the open invoice is paid; the Free plan's limits hold meanwhile.",
  canceled: "It was canceled; the Free plan's limits hold.",
};

/** The plan, its price and its state as sentences. */
export function planSentences(s: BillingSettings, whose: string): SafeHtml {
  const info = PLAN_TABLE[s.plan];
  const cost =
    info.monthlyCents === null
      ? "priced by agreement"
      : info.monthlyCents === 0
        ? "free"
        : info.perSeat
          ? `${dollars(info.monthlyCents * s.seats)} a month for ${s.seats} ${s.seats === 1 ? "seat" : "seats"}`
          : `${dollars(info.monthlyCents)} a month`;
  const renews = s.renewsAt && s.state !== "canceled" ? html` It renews on <strong>${s.renewsAt}</strong>.` : "";
  const card = s.cardOnFile ? "A card is on file." : "No card is on file yet.";
  return html`<p id="plan-words">${whose} is on the <strong id="plan" data-plan="${s.plan}">${info.title}</strong> plan, ${cost}. <span id="state" data-state="${s.state}">${STATE_WORDS[s.state]}</span>${renews}</p>
<p><span id="card" data-card="${s.cardOnFile ? "yes" : "no"}">${card}</span> This month so far: <strong>${s.usage.amountSoFar.formatted}</strong> (${s.usage.periodStart} to ${s.usage.periodEnd}).</p>`;
}

/** One limit as words and a bar: "2 of 3 apps". No limit: the count alone. */
function usageBar(id: string, label: string, used: number, limit: number | null, format: (n: number) => string) {
  if (limit === null)
    return html`<li data-usage="${id}"><span>${label}: <strong>${format(used)}</strong> (no limit)</span></li>`;
  const share = limit <= 0 ? (used > 0 ? 1 : 0) : Math.min(1, used / limit);
  const full = limit <= 0 ? used > 0 : used >= limit;
  return html`<li data-usage="${id}"><span>${label}: <strong>${format(used)}</strong> of ${format(limit)}${full ? html` <strong class="over">(limit reached)</strong>` : ""}</span>
<span class="meter${full ? " full" : ""}" aria-hidden="true"><span style="width:${(share * 100).toFixed(1)}%"></span></span></li>`;
}

export function usageSection(s: BillingSettings): SafeHtml {
  const limits = s.limits;
  if (!limits) return html``;
  const u = s.usage;
  const count = (n: number) => n.toLocaleString("en-US");
  const bars = [
    u.apps === undefined ? null : usageBar("apps", "Apps", u.apps, limits.apps, count),
    u.customDomains === undefined
      ? null
      : usageBar("custom-domains", "Custom domains", u.customDomains, limits.customDomains, count),
    usageBar("storage", "Storage", u.storageBytes, limits.storageBytes, gb),
    s.seatsUsed === null ? null : usageBar("seats", "People", s.seatsUsed, limits.seats, count),
    s.accountKind === "company" && u.companyAiTokens !== undefined
      ? usageBar(
          "company-ai",
          "AI tokens on the company's key this month",
          u.companyAiTokens,
          limits.companyAiTokensPerMonth,
          count,
        )
      : null,
  ];
  return html`<section aria-labelledby="usage"><h2 id="usage">Usage and limits</h2><ul class="usage">${bars}</ul>
<p class="muted">Also this month: ${count(u.opens)} app opens, ${count(u.aiTokens)} AI tokens, ${count(u.domains)} domains bought.</p></section>`;
}

const RECEIPT_STATUS: Record<Receipts["receipts"][number]["status"], string> = {
  paid: "Paid",
  open: "Not paid yet",
  void: "Voided",
  uncollectible: "Could not be collected",
  draft: "Draft",
  refunded: "Refunded",
};

/** Invoices and receipts, each with its lines (a plan's seats, a domain purchase) and the provider's page. */
function receiptsSection(list: Receipts["receipts"] | null): SafeHtml {
  const body =
    list === null
      ? html`<p class="muted">Invoices are not available right now; reload the page in a minute.</p>`
      : list.length === 0
        ? html`<p class="muted">No invoices or receipts yet.</p>`
        : list.map(
            (
              r,
            ) => html`<article class="card" data-receipt="${r.id}"><h3 style="margin:0 0 .4rem">${r.date}: ${r.total.formatted} · ${RECEIPT_STATUS[r.status]}</h3>
<table><thead><tr><th>Item</th><th>Quantity</th><th>Amount</th></tr></thead><tbody>${r.lines.map(
              (line) =>
                html`<tr><td>${line.description}</td><td>${line.quantity === null ? "" : String(line.quantity)}</td><td>${line.amount.formatted}</td></tr>`,
            )}</tbody></table>${r.number ? html`<p class="muted">Invoice ${r.number}</p>` : ""}${r.url ? html`<p><a href="${r.url}" rel="noopener">Open the invoice of ${r.date}</a></p>` : ""}</article>`,
          );
  return html`<section aria-labelledby="receipts"><h2 id="receipts">Invoices and receipts</h2>${body}</section>`;
}

function settingsPage(
  state: Signed,
  s: BillingSettings,
  query: Query | null,
  message?: string,
  receipts: Receipts["receipts"] | null = null,
): Response {
  const rows = Object.values(PLAN_TABLE).map(
    (
      p,
    ) => html`<tr${p.plan === s.plan ? html` aria-current="true"` : ""}><td><strong>${p.title}</strong>${p.plan === s.plan ? " (yours)" : ""}<br><span class="muted">${p.forWhom}</span></td>
<td>${price(p.plan)}</td><td>${n(p.limits.apps)}</td><td>${n(p.limits.customDomains)}</td><td>${gb(p.limits.storageBytes)}</td><td>${people(p)}</td></tr>`,
  );
  const current = state.view?.current;
  const whose = current ? (current.kind === "personal" ? "Your personal account" : current.name) : "Your account";
  const seats = seatsWanted(s, query);
  const upgrade = (plan: "pro" | "team") =>
    html`<button type="submit" name="plan" value="${plan}">${payWords(plan, seats)}</button>${plan === "team" ? html`<input type="hidden" name="seats" value="${String(seats)}">` : ""}`;
  const body = html`<h1>Billing of ${current ? accountWords(current) : "your account"}</h1>${notice(message)}
<div class="card">${planSentences(s, whose)}${seatsLine(s)}</div>
<form method="post" action="${SETTINGS}">${csrfField(state.csrfToken)}<div class="actions">
${s.plan === "free" ? choosable(s).map(upgrade) : ""}
${s.cardOnFile ? "" : html`<button class="secondary" type="submit" name="to" value="checkout">Add a card</button>`}
${s.cardOnFile || s.plan !== "free" ? html`<button class="secondary" type="submit" name="to" value="portal">Manage card and plan</button>` : ""}
</div></form>
${s.accountKind === "company" ? html`<form class="stack" method="post" action="${SETTINGS}">${csrfField(state.csrfToken)}${seatsField(seats)}<div class="actions"><button type="submit" name="to" value="seats">${PLAN_TABLE[s.plan].perSeat ? "Change seats" : `Choose Team with these seats (${dollars(PLAN_TABLE.team.monthlyCents ?? 0)} a month each)`}</button></div></form>` : ""}
${usageSection(s)}
${receiptsSection(receipts)}
<section aria-labelledby="plans"><h2 id="plans">Plans</h2>
<table><thead><tr><th>Plan</th><th>Price</th><th>Apps</th><th>Domains</th><th>Storage</th><th>People</th></tr></thead><tbody>${rows}</tbody></table></section>`;
  return page(state, "Billing", body);
}

function checkoutPage(state: Signed, s: BillingSettings, query: Query | null, error?: string, status = 200): Response {
  const wanted = query?.get("plan") ?? null;
  const plans = ["free", ...choosable(s)] as const;
  const selected = plans.includes(wanted as never) ? wanted : s.plan === "free" ? "free" : s.plan;
  const body = html`<h1>Checkout (local test provider)</h1>${notice(error, true)}
<p class="muted">This Hatch server has no payment provider: nothing is charged. Use the test card 4242 4242 4242 4242.</p>
<form class="stack" method="post" action="${SETTINGS}/checkout">${csrfField(state.csrfToken)}
<label>Card number<input type="text" name="card" inputmode="numeric" autocomplete="off" required maxlength="23"></label>
<fieldset><legend>Plan</legend>${plans.map(
    (plan) =>
      html`<label class="choice"><input type="radio" name="plan" value="${plan}"${plan === selected ? " checked" : ""}> ${PLAN_TABLE[plan].title} (${price(plan)})</label>`,
  )}</fieldset>${s.accountKind === "company" ? seatsField(seatsWanted(s, query)) : ""}
<div class="actions"><button type="submit">Save</button><a href="${SETTINGS}">Cancel</a></div></form>`;
  return page(state, "Checkout", body, status);
}

function portalPage(
  state: Signed,
  s: BillingSettings,
  query: Query | null,
  message?: string,
  error = false,
  status = 200,
): Response {
  const others = (["free", ...choosable(s)] as const).filter((plan) => plan !== s.plan);
  const body = html`<h1>Manage billing (local test provider)</h1>${notice(message, error)}
<div class="card"><p>Plan <strong>${s.plan}</strong> (${s.state}); card on file: ${s.cardOnFile ? "yes" : "no"}.</p>${seatsLine(s)}</div>
${s.plan === "team" ? html`<form class="stack" method="post" action="${SETTINGS}/portal">${csrfField(state.csrfToken)}${seatsField(seatsWanted(s, query))}<div class="actions"><button type="submit" name="action" value="seats">Pay for these seats</button></div></form>` : ""}
<form method="post" action="${SETTINGS}/portal">${csrfField(state.csrfToken)}<div class="actions">
${others.map((plan) => html`<button type="submit" name="plan" value="${plan}"${plan === "free" ? html` class="danger"` : ""}>${plan === "free" ? "Cancel the paid plan" : `Switch to ${PLAN_TABLE[plan].title}`}</button>`)}
${s.cardOnFile ? html`<button class="secondary" type="submit" name="action" value="remove_card">Remove the card</button>` : html`<a href="${SETTINGS}/checkout">Add a card</a>`}
</div></form><p><a href="${SETTINGS}">Back to billing</a></p>`;
  return page(state, "Manage billing", body, status);
}

export function billingPages(deps: BillingPagesDeps) {
  const signIn = (state: BrowserState, next: string) => signInRedirect(next, state.setCookies);

  async function settings(user: Signed["user"]): Promise<BillingSettings> {
    const { ctx, requestId } = await dashboardContext(deps, user, "read");
    return callRpc(deps.bus, "billing", rpcMethods.billing.settings, {}, BillingSettingsSchema, { ctx, requestId });
  }

  /** The invoices and receipts of the account; null (the page says so) while billing or the provider cannot answer. */
  async function receipts(user: Signed["user"]): Promise<Receipts["receipts"] | null> {
    try {
      const { ctx, requestId } = await dashboardContext(deps, user, "read");
      const answer = await callRpc(deps.bus, "billing", rpcMethods.billing.receipts, {}, ReceiptsSchema, {
        ctx,
        requestId,
      });
      return answer.receipts;
    } catch (error) {
      deps.logger.warn("billing receipts unavailable", { error: error instanceof Error ? error.name : "unknown" });
      return null;
    }
  }

  async function act(user: Signed["user"], input: LocalActInput) {
    const { ctx, requestId } = await dashboardContext(deps, user, "write");
    return callRpc(deps.bus, "billing", rpcMethods.billing.localAct, input, LocalActResultSchema, { ctx, requestId });
  }

  /** GET: signed in, then the page; every failure is a page that says what to do. */
  async function show(
    request: Request,
    render: (state: Signed, s: BillingSettings, url: URL) => Response | Promise<Response>,
  ): Promise<Response> {
    const url = new URL(request.url);
    const state = await deps.auth.pages.state(request);
    if (!state.user) return signIn(state, url.pathname + url.search);
    // A refusal keeps the switcher: a member refused an organization's billing switches to their own from there.
    const signed = await switched(deps, request, { ...state, user: state.user }, url.pathname);
    try {
      return await render(signed, await settings(signed.user), url);
    } catch (error) {
      return failure(signed, error);
    }
  }

  /** POST: size cap, CSRF (pages.form), signed in. */
  async function post(
    request: Request,
    next: string,
    handle: (state: Signed, form: Form) => Promise<Response>,
  ): Promise<Response> {
    const form = await readDashboardForm(deps.auth, request, FORM_MAX_BYTES);
    if ("refused" in form) return form.refused;
    if (!form.state.user) return signIn(form.state, next);
    const signed = await switched(deps, request, { ...form.state, user: form.state.user }, next);
    try {
      return await handle(signed, form);
    } catch (error) {
      return failure(signed, error);
    }
  }

  function failure(state: BrowserState, error: unknown): Response {
    if (isToolError(error) && error.code !== "internal") {
      const status = httpStatusOf(error.code);
      return page(state, "Billing", html`<h1>Billing</h1><p class="error" role="alert">${error.message}</p>`, status);
    }
    // Never the form: it may hold a card number.
    deps.logger.error("billing page failed", { error: error instanceof Error ? error.name : "unknown" });
    return page(
      state,
      "Billing",
      html`<h1>Something went wrong</h1><p class="error" role="alert">Something went wrong on our side. Try again in a minute.</p>`,
      500,
    );
  }

  const goTo = (state: Signed, { params }: Form) => {
    const plan = params.get("plan");
    const to = plan ? "checkout" : params.get("to");
    const seats = Number(params.get("seats"));
    if (to === "seats" && !(Number.isInteger(seats) && seats >= 1 && seats <= MAX_SEATS))
      return Promise.resolve(
        page(
          state,
          "Billing",
          html`<p class="error" role="alert">Seats are a whole number from 1 to ${String(MAX_SEATS)}.</p>`,
          400,
        ),
      );
    if (to !== "checkout" && to !== "portal" && to !== "seats")
      return Promise.resolve(
        page(state, "Billing", html`<p class="error" role="alert">Choose a button on the billing page.</p>`, 400),
      );
    return dashboardContext(deps, state.user, "write")
      .then(({ ctx, requestId }) =>
        callRpc(
          deps.bus,
          "billing",
          rpcMethods.billing.settingsLink,
          {
            to,
            ...(plan ? { plan } : {}),
            ...(to === "seats" || (plan === "team" && Number.isInteger(seats) && seats >= 1 && seats <= MAX_SEATS)
              ? { seats }
              : {}),
          },
          BillingLinkSchema,
          { ctx, requestId },
        ),
      )
      .then(({ url }) => redirect(url, cookieHeaders(state.setCookies)));
  };

  async function checkout(state: Signed, { params }: Form): Promise<Response> {
    // The number is reduced to a verdict at once; only the verdict goes on.
    const card = (params.get("card") ?? "").replace(/[\s-]/g, "") === TEST_CARD ? "ok" : "declined";
    const plan = params.get("plan") ?? "free";
    const seats = Number(params.get("seats") ?? "1");
    const again = (error: string, status: number) =>
      settings(state.user).then((s) => checkoutPage(state, s, params, error, status));
    if (plan !== "free" && plan !== "pro" && plan !== "team") return again("Choose a plan.", 400);
    if (plan === "team" && !(Number.isInteger(seats) && seats >= 1 && seats <= MAX_SEATS))
      return again(`Seats are a whole number from 1 to ${MAX_SEATS}.`, 400);
    const result = await act(state.user, { action: "checkout", card, plan, ...(plan === "team" ? { seats } : {}) });
    if (!result.ok) return again(result.message, 402);
    return redirect(`${SETTINGS}?done=1`, cookieHeaders(state.setCookies));
  }

  async function portal(state: Signed, { params }: Form): Promise<Response> {
    const plan = params.get("plan");
    const seats = Number(params.get("seats"));
    const input: LocalActInput | null =
      params.get("action") === "remove_card"
        ? { action: "remove_card" }
        : params.get("action") === "seats" && Number.isInteger(seats) && seats >= 1 && seats <= MAX_SEATS
          ? { action: "seats", seats }
          : plan === "free" || plan === "pro" || plan === "team"
            ? { action: "plan", plan }
            : null;
    if (!input) return portalPage(state, await settings(state.user), null, "Choose a button.", true, 400);
    const result = await act(state.user, input);
    return portalPage(state, await settings(state.user), null, result.message, !result.ok, result.ok ? 200 : 400);
  }

  return new Elysia({ name: "hatch-billing-pages" })
    .get(SETTINGS, ({ request }) =>
      show(request, async (state, s, url) =>
        settingsPage(
          state,
          s,
          url.searchParams,
          url.searchParams.has("done") ? "Saved." : undefined,
          await receipts(state.user),
        ),
      ),
    )
    .post(SETTINGS, ({ request }) => post(request, SETTINGS, goTo), { parse: "none" })
    .get(`${SETTINGS}/checkout`, ({ request }) =>
      show(request, (state, s, url) => checkoutPage(state, s, url.searchParams)),
    )
    .post(`${SETTINGS}/checkout`, ({ request }) => post(request, `${SETTINGS}/checkout`, checkout), { parse: "none" })
    .get(`${SETTINGS}/portal`, ({ request }) =>
      show(request, (state, s, url) => portalPage(state, s, url.searchParams)),
    )
    .post(`${SETTINGS}/portal`, ({ request }) => post(request, `${SETTINGS}/portal`, portal), { parse: "none" });
}
