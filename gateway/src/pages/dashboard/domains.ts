import {
  buy_domain,
  company_domain,
  company_domain_set,
  custom_domain,
  custom_domains,
  domain_status,
  find_domain,
  type BuyDomainOutput,
  type CompanyDomainSetOutput,
  type FindDomainOutput,
  type ToolContract,
  type CompanyDomainOutput,
  type CustomDomainOutput,
  type CustomDomainsOutput,
  type DnsRecord,
  type DomainStatusOutput,
} from "@hatch/contracts";
import { Elysia } from "elysia";
import type { Params } from "../../auth/index.ts";
import { copyable, csrfField, html, type SafeHtml } from "../layout.ts";
import { callTool, readTool, Refusal, type DashboardCallDeps } from "./calls.ts";
import { appPath, noticeOf, when, type Notice } from "./views.ts";
import { forPeople } from "./words.ts";
import type { AccountView } from "./account-choice.ts";

// The domain pages: /dashboard/apps/<address>/domains (an app's own domains: the DNS records to add, each with a copy
// button, the progress, check again, connect and disconnect) and /dashboard/domains (the domains the person bought, the
// company's address for apps). Each read and action is the tool itself (calls.ts): the service checks who may see or
// change what, and a disconnect's question becomes the confirm step.

/** What index.ts lends these pages: its sign-in check, CSRF-checked forms, post/redirect/get and the confirm step. */
export interface DomainPagesKit<Signed extends { user: Parameters<typeof callTool>[1]; csrfToken: string }> {
  guard: (handler: (state: Signed, notice: Notice) => Promise<Response>) => (request: Request) => Promise<Response>;
  posted: (request: Request, back: string) => Promise<{ state: Signed; params: Params } | Response>;
  done: (state: Signed, path: string, text: string) => Response;
  problem: (state: Signed, error: unknown) => Response;
  page: (state: Signed, title: string, body: SafeHtml, status?: number) => Response;
  askPage: (
    state: Signed,
    contract: ToolContract,
    input: unknown,
    back: string,
    question: import("@hatch/contracts").Question,
    action: string,
  ) => Response;
}

export const appDomainsPath = (address: string) => `${appPath(address)}/domains`;

const CONNECTION_STEPS = [
  ["dns", "DNS records"],
  ["certificate", "HTTPS certificate"],
  ["live", "Live"],
] as const;

export const STAGE_WORDS: Record<string, string> = {
  registering: "Being registered",
  dns: "Waiting for the DNS records",
  certificate: "DNS is right; the HTTPS certificate is being issued",
  live: "Live",
};

const RECORD_STATUS: Record<DnsRecord["status"], string> = {
  missing: "Not seen yet",
  wrong: "Found with another value",
  ok: "In place",
};

/** The steps of a connection, the current one marked for screen readers and by its words. */
export function progress(stage: string): SafeHtml {
  const at = CONNECTION_STEPS.findIndex(([s]) => s === stage);
  return html`<ol class="progress" aria-label="Progress">${CONNECTION_STEPS.map(([step, label], i) => {
    const state = i < at || stage === "live" ? "done" : i === at ? "now" : "later";
    const words = state === "done" ? "done" : state === "now" ? "in progress" : "next";
    return html`<li data-step="${step}"${state === "now" ? html` aria-current="step"` : ""}>${state === "now" ? html`<strong>${label}</strong>` : label} <span class="muted">(${words})</span></li>`;
  })}</ol>`;
}

/** The DNS records to add, name and value each with a copy button. */
export function recordsTable(records: DnsRecord[], subject: string): SafeHtml {
  if (!records.length) return html`<p class="muted">All DNS records are in place.</p>`;
  return html`<p>Add these records at the company that runs the DNS of ${subject}:</p>
<table><thead><tr><th>Type</th><th>Name</th><th>Value</th><th>TTL</th><th>Status</th></tr></thead><tbody>${records.map(
    (r, i) =>
      html`<tr data-record="${r.type} ${r.name}"><td>${r.type}</td><td>${copyable(r.name, `the name of record ${i + 1}`)}</td><td>${copyable(r.value, `the value of record ${i + 1}`)}${r.purpose ? html`<br><span class="muted">${r.purpose}</span>` : ""}</td><td>${r.ttl === null ? "Default" : `${r.ttl} s`}</td><td>${RECORD_STATUS[r.status]}</td></tr>`,
  )}</tbody></table>`;
}

type CustomDomain = CustomDomainsOutput["domains"][number];

/** One custom domain: its stage in words, the steps, where it opens once live, a problem, the records still to add. */
export function domainCard(d: CustomDomain, actions: SafeHtml | ""): SafeHtml {
  const address =
    d.stage === "live"
      ? html`<p>Open at <a href="https://${d.hostname}/" rel="noopener">https://${d.hostname}/</a></p>`
      : "";
  const checked = d.checkedAt ? html` · last checked ${when(d.checkedAt)}` : "";
  const problem = d.problem ? html`<p class="error">${d.problem}</p>` : "";
  return html`<article class="card" data-domain="${d.hostname}"><h3 style="margin:0 0 .4rem">${d.hostname}</h3>
<p class="muted">${STAGE_WORDS[d.stage] ?? d.stage}${checked}</p>${progress(d.stage)}${address}${problem}
${d.stage === "dns" ? recordsTable(d.records, d.hostname) : ""}${actions ? html`<div class="actions">${actions}</div>` : ""}</article>`;
}

export function appDomainsBody(csrf: string, data: CustomDomainsOutput, notice: Notice, typed = ""): SafeHtml {
  const base = appDomainsPath(data.address);
  const form = (action: string, inner: SafeHtml, attrs: SafeHtml | "" = "") =>
    html`<form method="post" action="${base}/${action}"${attrs}>${csrfField(csrf)}${inner}</form>`;
  const card = (d: CustomDomain) => {
    const check =
      d.stage === "live"
        ? ""
        : form("check", html`<button type="submit" class="secondary">Check ${d.hostname} again</button>`);
    const disconnect = form(
      "disconnect",
      html`<input type="hidden" name="hostname" value="${d.hostname}"><button type="submit" class="danger">Disconnect ${d.hostname}</button>`,
    );
    return domainCard(d, html`${check}${disconnect}`);
  };
  const connect = form(
    "connect",
    html`<label>Your domain or subdomain, for example todo.example.com<input type="text" name="hostname" value="${typed}" required autocomplete="off" spellcheck="false"></label><div class="actions"><button type="submit">Connect</button></div>`,
    html` class="stack"`,
  );
  return html`<p><a href="${appPath(data.address)}">← ${data.address}</a></p><h1>Domains of ${data.address}</h1>${noticeOf(notice)}
<section aria-labelledby="connected"><h2 id="connected">Your domains for this app</h2>${
    data.domains.length ? data.domains.map(card) : html`<p class="muted">This app is on no domain of yours yet.</p>`
  }</section>
<section aria-labelledby="connect"><h2 id="connect">Connect a domain</h2>
<p class="muted">The app then also opens at that domain. You add the DNS records shown here where your domain's DNS is managed; the HTTPS certificate follows by itself.</p>${connect}</section>
<p><a href="/dashboard/domains">Domains you bought</a></p>`;
}

export interface DomainsPageData {
  bought: DomainStatusOutput | null;
  company: CompanyDomainOutput | null;
  /** Whether the person may set up or remove the organization's address (its owner and admins). */
  companyAdmin?: boolean;
  /** A search for domains to buy: what was typed and what was found (null: the search could not be made). */
  find?: { query: string; results: FindDomainOutput["results"] | null; error?: string };
  /** A purchase that needs a card first: the page where the person adds one. */
  addCard?: { domain: string; url: string | null };
  csrf?: string;
  /** The account the page shows (the switcher's): the bought list and purchases are its. */
  account?: { kind: "personal" | "company"; name: string };
}

/** A domain with its prices, as find_domain and buy_domain give them. */
export interface DomainOffer {
  domain: string;
  premium?: boolean;
  firstYearPrice: { formatted: string } | null;
  renewalPrice: { formatted: string } | null;
}

/** Domains with their first-year and renewal prices, and a last column (`last`: its heading; `cell`: its content). */
export function offersTable<O extends DomainOffer>(offers: O[], last: string, cell: (offer: O) => SafeHtml): SafeHtml {
  return html`<table><thead><tr><th>Domain</th><th>First year</th><th>Then each year</th><th>${last}</th></tr></thead><tbody>${offers.map(
    (r) =>
      html`<tr data-offer="${r.domain}"><td><strong>${r.domain}</strong>${r.premium ? html` <span class="muted">(premium)</span>` : ""}</td><td>${r.firstYearPrice?.formatted ?? "—"}</td><td>${r.renewalPrice?.formatted ?? "—"}</td><td>${cell(r)}</td></tr>`,
  )}</tbody></table>`;
}

/** The search form and its results, each available name with its prices and a Buy button that leads to the confirm step. */
function findSection(data: DomainsPageData): SafeHtml {
  const find = data.find;
  const form = html`<form class="stack" method="get" action="/dashboard/domains#buy"><label>A word or a domain name, for example acme or acme.com<input type="text" name="find" value="${find?.query ?? ""}" required maxlength="253" autocomplete="off" spellcheck="false"></label><div class="actions"><button type="submit">Find domains</button></div></form>`;
  const card = data.addCard
    ? html`<div class="error" role="alert" data-add-card><p>A card is needed before buying ${data.addCard.domain}. Nothing was bought or charged.</p><p><a href="${data.addCard.url ?? "/dashboard/billing"}">Add a card</a>, then come back and buy it.</p></div>`
    : "";
  let results: SafeHtml | "" = "";
  if (find?.error) results = html`<p class="error" role="alert">${find.error}</p>`;
  else if (find?.results && find.results.length === 0)
    results = html`<p class="muted">Nothing found for ${find.query}. Try another word.</p>`;
  else if (find?.results)
    results = html`${offersTable(find.results, "Buy", (r) =>
      r.available && r.firstYearPrice
        ? html`<form method="post" action="/dashboard/domains/buy">${csrfField(data.csrf ?? "")}<input type="hidden" name="domain" value="${r.domain}"><button type="submit">Buy ${r.domain} for ${r.firstYearPrice.formatted}</button></form>`
        : html`<span class="muted">Taken</span>`,
    )}<p class="muted">You confirm the price and the owner's details on the next page; nothing is charged before that.</p>`;
  return html`<section aria-labelledby="buy"><h2 id="buy">Buy a domain</h2>${card}${form}${results}</section>`;
}

function companySection(data: DomainsPageData): SafeHtml | "" {
  if (!data.company) return "";
  const c = data.company;
  const post = (path: string, inner: SafeHtml, attrs: SafeHtml | "" = "") =>
    html`<form method="post" action="/dashboard/domains/company${path}"${attrs}>${csrfField(data.csrf ?? "")}${inner}</form>`;
  const current = c.domain
    ? html`<div class="card" data-company-domain="${c.domain}"><p style="margin-top:0"><strong>${c.domain}</strong> · ${STAGE_WORDS[c.stage ?? "dns"] ?? c.stage}</p>
${c.appUrlPattern ? html`<p class="muted">Apps open at ${c.appUrlPattern}</p>` : ""}${c.stage ? progress(c.stage) : ""}
${c.problem ? html`<p class="error">${c.problem}</p>` : ""}${c.stage === "dns" ? recordsTable(c.records, c.domain) : ""}${
  data.companyAdmin
    ? html`<div class="actions">${post("/remove", html`<button type="submit" class="danger">Stop using ${c.domain}</button>`)}</div>`
    : ""
}</div>`
    : html`<p class="muted">Your organization has no address of its own for apps; they open at Hatch's address.</p>`;
  const set = data.companyAdmin
    ? post(
        "",
        html`<label>${c.domain ? "Another domain for the organization's apps" : "A domain for the organization's apps"}, for example apps.example.com<input type="text" name="domain" required maxlength="253" autocomplete="off" spellcheck="false"></label><div class="actions"><button type="submit">${c.domain ? "Use this domain instead" : "Set up this domain"}</button></div>`,
        html` class="stack"`,
      )
    : html`<p class="muted">The organization's owner and admins set this up.</p>`;
  return html`<section aria-labelledby="company"><h2 id="company">Your organization's address for apps</h2>${current}${set}</section>`;
}

export function domainsBody(data: DomainsPageData, notice: Notice): SafeHtml {
  const bought = data.bought
    ? data.bought.domains.length
      ? html`<table><thead><tr><th>Domain</th><th>Stage</th><th>Renews</th><th>App</th></tr></thead><tbody>${data.bought.domains.map(
          (d) =>
            html`<tr data-bought="${d.domain}"><td><strong>${d.domain}</strong>${d.problem ? html`<br><span class="error">${d.problem}</span>` : ""}</td><td>${STAGE_WORDS[d.stage] ?? d.stage}</td><td>${d.renewsAt ? `${d.renewsAt.slice(0, 10)}${d.autoRenew ? "" : " (renewal is off)"}` : "Not known yet"}${d.renewalPrice ? html`<br><span class="muted">${d.renewalPrice.formatted} a year</span>` : ""}</td><td>${d.address ? html`<a href="${appPath(d.address)}">${d.address}</a>` : html`<span class="muted">None</span>`}</td></tr>`,
        )}</tbody></table>`
      : html`<p class="muted">You have not bought a domain.</p>`
    : html`<p class="muted">Bought domains are not available right now.</p>`;
  return html`<h1>Domains</h1>${noticeOf(notice)}
<section aria-labelledby="bought"><h2 id="bought">${
    !data.account
      ? "Domains you bought"
      : data.account.kind === "personal"
        ? "Domains of your personal account"
        : `Domains of ${data.account.name}`
  }</h2>${bought}</section>
${data.csrf === undefined ? "" : findSection(data)}
${companySection(data)}
<p class="muted">To put an app on a domain of yours, open the app and choose Domains.</p>`;
}

/** A refusal in a person's words (words.ts), or, when every sentence was meant for an AI, that nothing changed. */
export const refusalForPeople = (text: string): string => forPeople(text, "That did not work. Nothing was changed.");

/** The domain tools a page's confirm step sends: their answers and refusals get the page's own words. */
export const isDomainAction = (contract: ToolContract) =>
  contract === custom_domain || contract === buy_domain || contract === company_domain_set;

/** What a domain action that went through says on the page (a tool's own text is written for an AI); null: not ours. */
export function domainPageWords(contract: ToolContract, data: unknown): string | null {
  if (contract === custom_domain) return domainDoneWords(data as CustomDomainOutput);
  if (contract === buy_domain) {
    const d = data as BuyDomainOutput;
    if (d.status === "bought")
      return `Bought ${d.domain} for ${d.firstYearPrice?.formatted ?? "its price"}; it renews at ${d.renewalPrice?.formatted ?? "its price"} a year. It is being registered now; DNS and the HTTPS certificate follow by themselves, usually within minutes.`;
    return d.userAction?.kind === "open_link"
      ? `Nothing was bought: add a card on the billing page first, then buy ${d.domain} again.`
      : `You chose not to buy ${d.domain}; nothing was bought or charged.`;
  }
  if (contract === company_domain_set) {
    const d = data as CompanyDomainSetOutput;
    if (d.status === "set")
      return `${d.domain} is the organization's address for apps. Add the DNS records shown here where its DNS is managed.`;
    if (d.status === "removed")
      return "The organization's address for apps is removed; apps open at Hatch's address again.";
    return "Nothing was changed.";
  }
  return null;
}

/** What a connect or disconnect that worked says on the page (the tool's own text is written for an AI). */
export function domainDoneWords(data: CustomDomainOutput): string {
  if (data.status === "connected")
    return `${data.hostname} is connected. Add the DNS records below; this page shows when each is seen.`;
  if (data.status === "disconnected")
    return `${data.hostname} is disconnected. The app stays at its Hatch address; you may remove the DNS records of ${data.hostname}.`;
  return `${data.hostname} stays connected.`;
}

/** The routes of the domain pages. */
export function domainPages<Signed extends { user: Parameters<typeof callTool>[1]; csrfToken: string }>(
  deps: DashboardCallDeps,
  kit: DomainPagesKit<Signed>,
) {
  async function appDomainsPage(
    state: Signed,
    address: string,
    notice: Notice = null,
    status = 200,
    typed = "",
  ): Promise<Response> {
    const data = await readTool(deps, state.user, custom_domains, { address });
    return kit.page(state, `Domains of ${data.address}`, appDomainsBody(state.csrfToken, data, notice, typed), status);
  }

  async function domainsPage(
    state: Signed,
    notice: Notice,
    options: { query?: string; addCard?: DomainsPageData["addCard"]; status?: number } = {},
  ): Promise<Response> {
    const query = options.query?.trim();
    const [bought, company, found] = await Promise.all([
      callTool(deps, state.user, domain_status, {}),
      callTool(deps, state.user, company_domain, {}),
      query ? callTool(deps, state.user, find_domain, { query }) : Promise.resolve(null),
    ]);
    const current = (state as { view?: AccountView }).view?.current;
    const data: DomainsPageData = {
      bought: bought.kind === "done" ? bought.data : null,
      // A personal account has no company address: the section is left out.
      company: company.kind === "done" && current?.kind !== "personal" ? company.data : null,
      companyAdmin: current?.kind === "company" && (current.role === "owner" || current.role === "admin"),
      ...(current ? { account: current } : {}),
      csrf: state.csrfToken,
      ...(options.addCard ? { addCard: options.addCard } : {}),
      ...(query && found
        ? {
            find: {
              query,
              results: found.kind === "done" ? found.data.results : null,
              ...(found.kind === "refused" ? { error: refusalForPeople(found.message) } : {}),
            },
          }
        : {}),
    };
    return kit.page(state, "Domains", domainsBody(data, notice), options.status);
  }

  /** Buy: the tool's question (price and owner's details) as the confirm step, or why not (no card: billing's link). */
  async function buyAction(request: Request) {
    const back = "/dashboard/domains";
    const form = await kit.posted(request, back);
    if (form instanceof Response) return form;
    const { state, params } = form;
    try {
      const domain = (params.get("domain") ?? "").trim().toLowerCase();
      const input = { domain };
      const answer = await callTool(deps, state.user, buy_domain, input);
      if (answer.kind === "ask") return kit.askPage(state, buy_domain, input, back, answer.question, `Buy ${domain}`);
      if (answer.kind === "refused")
        return await domainsPage(state, { text: refusalForPeople(answer.message), error: true }, { status: 400 });
      if (answer.data.status === "needs_user" && answer.data.userAction?.kind === "open_link")
        return await domainsPage(state, null, { addCard: { domain, url: answer.data.userAction.url }, status: 402 });
      return kit.done(state, back, domainPageWords(buy_domain, answer.data) ?? "");
    } catch (error) {
      return kit.problem(state, error);
    }
  }

  /** The organization's address: set (or replace, after the confirm step) or remove (after the confirm step). */
  async function companyAction(request: Request, action: "set" | "remove") {
    const back = "/dashboard/domains";
    const form = await kit.posted(request, back);
    if (form instanceof Response) return form;
    const { state, params } = form;
    try {
      const domain = (params.get("domain") ?? "").trim().toLowerCase();
      const input = action === "set" ? { action, domain } : { action };
      const answer = await callTool(deps, state.user, company_domain_set, input);
      if (answer.kind === "ask")
        return kit.askPage(
          state,
          company_domain_set,
          input,
          back,
          answer.question,
          action === "set" ? `Use ${domain}` : "Stop using it",
        );
      if (answer.kind === "refused") {
        if (answer.code === "forbidden")
          return kit.problem(state, new Refusal(answer.code, refusalForPeople(answer.message)));
        return await domainsPage(state, { text: refusalForPeople(answer.message), error: true }, { status: 400 });
      }
      return kit.done(state, back, domainPageWords(company_domain_set, answer.data) ?? "");
    } catch (error) {
      return kit.problem(state, error);
    }
  }

  /** Connect or disconnect: the tool's words on the domains page, its refusal there (input kept), or the confirm step. */
  async function domainAction(request: Request, address: string, action: "connect" | "disconnect") {
    const back = appDomainsPath(address);
    const form = await kit.posted(request, back);
    if (form instanceof Response) return form;
    const { state, params } = form;
    try {
      const hostname = (params.get("hostname") ?? "").trim();
      const input = { address, hostname, action };
      const answer = await callTool(deps, state.user, custom_domain, input);
      if (answer.kind === "ask") return kit.askPage(state, custom_domain, input, back, answer.question, "Disconnect");
      if (answer.kind === "refused") {
        if (answer.code === "not_found" || answer.code === "forbidden")
          return kit.problem(state, new Refusal(answer.code, answer.message));
        return await appDomainsPage(state, address, { text: answer.message, error: true }, 400, hostname);
      }
      return kit.done(state, back, domainDoneWords(answer.data));
    } catch (error) {
      return kit.problem(state, error);
    }
  }

  /** Check again: looking at the domains asks the service to check each waiting one now. */
  async function checkAction(request: Request, address: string) {
    const back = appDomainsPath(address);
    const form = await kit.posted(request, back);
    if (form instanceof Response) return form;
    const { state } = form;
    try {
      await readTool(deps, state.user, custom_domains, { address });
      return kit.done(
        state,
        back,
        "Checking the DNS records again. Reload this page in a moment to see what was found.",
      );
    } catch (error) {
      return kit.problem(state, error);
    }
  }

  const raw = { parse: "none" } as const;
  return new Elysia({ name: "hatch-dashboard-domains" })
    .get("/dashboard/domains", ({ request }) =>
      kit.guard((state, notice) =>
        domainsPage(state, notice, { query: new URL(request.url).searchParams.get("find") ?? undefined }),
      )(request),
    )
    .post("/dashboard/domains/buy", ({ request }) => buyAction(request), raw)
    .post("/dashboard/domains/company", ({ request }) => companyAction(request, "set"), raw)
    .post("/dashboard/domains/company/remove", ({ request }) => companyAction(request, "remove"), raw)
    .get("/dashboard/apps/:address/domains", ({ request, params }) =>
      kit.guard((state, notice) => appDomainsPage(state, params.address, notice))(request),
    )
    .post(
      "/dashboard/apps/:address/domains/connect",
      ({ request, params }) => domainAction(request, params.address, "connect"),
      raw,
    )
    .post(
      "/dashboard/apps/:address/domains/disconnect",
      ({ request, params }) => domainAction(request, params.address, "disconnect"),
      raw,
    )
    .post("/dashboard/apps/:address/domains/check", ({ request, params }) => checkAction(request, params.address), raw);
}
