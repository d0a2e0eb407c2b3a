import {
  company_domain,
  custom_domain,
  custom_domains,
  domain_status,
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
    contract: typeof custom_domain,
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

const STAGE_WORDS: Record<string, string> = {
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
function progress(stage: string): SafeHtml {
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

export function appDomainsBody(csrf: string, data: CustomDomainsOutput, notice: Notice, typed = ""): SafeHtml {
  const base = appDomainsPath(data.address);
  const form = (action: string, inner: SafeHtml, attrs: SafeHtml | "" = "") =>
    html`<form method="post" action="${base}/${action}"${attrs}>${csrfField(csrf)}${inner}</form>`;
  const card = (d: CustomDomainsOutput["domains"][number]) => {
    const live = d.stage === "live";
    const address = live
      ? html`<p>Open at <a href="https://${d.hostname}/" rel="noopener">https://${d.hostname}/</a></p>`
      : "";
    const checked = d.checkedAt ? html` · last checked ${when(d.checkedAt)}` : "";
    const problem = d.problem ? html`<p class="error">${d.problem}</p>` : "";
    const check = live
      ? ""
      : form("check", html`<button type="submit" class="secondary">Check ${d.hostname} again</button>`);
    const disconnect = form(
      "disconnect",
      html`<input type="hidden" name="hostname" value="${d.hostname}"><button type="submit" class="danger">Disconnect ${d.hostname}</button>`,
    );
    return html`<article class="card" data-domain="${d.hostname}"><h3 style="margin:0 0 .4rem">${d.hostname}</h3>
<p class="muted">${STAGE_WORDS[d.stage] ?? d.stage}${checked}</p>${progress(d.stage)}${address}${problem}
${d.stage === "dns" ? recordsTable(d.records, d.hostname) : ""}<div class="actions">${check}${disconnect}</div></article>`;
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
  const company = data.company
    ? data.company.domain
      ? html`<div class="card" data-company-domain="${data.company.domain}"><p style="margin-top:0"><strong>${data.company.domain}</strong> · ${STAGE_WORDS[data.company.stage ?? "dns"] ?? data.company.stage}</p>
${data.company.appUrlPattern ? html`<p class="muted">Apps open at ${data.company.appUrlPattern}</p>` : ""}${data.company.stage ? progress(data.company.stage) : ""}
${data.company.problem ? html`<p class="error">${data.company.problem}</p>` : ""}${data.company.stage === "dns" ? recordsTable(data.company.records, data.company.domain) : ""}</div>`
      : html`<p class="muted">Your organization has no address of its own for apps; they open at Hatch's address.</p>`
    : "";
  return html`<h1>Domains</h1>${noticeOf(notice)}
<section aria-labelledby="bought"><h2 id="bought">Domains you bought</h2>${bought}</section>
${data.company ? html`<section aria-labelledby="company"><h2 id="company">Your organization's address for apps</h2>${company}</section>` : ""}
<p class="muted">To put an app on a domain of yours, open the app and choose Domains.</p>`;
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

  async function domainsPage(state: Signed, notice: Notice): Promise<Response> {
    const [bought, company] = await Promise.all([
      callTool(deps, state.user, domain_status, {}),
      callTool(deps, state.user, company_domain, {}),
    ]);
    const data: DomainsPageData = {
      bought: bought.kind === "done" ? bought.data : null,
      // A personal account has no company address: the section is left out.
      company: company.kind === "done" ? company.data : null,
    };
    return kit.page(state, "Domains", domainsBody(data, notice));
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
    .get("/dashboard/domains", ({ request }) => kit.guard((state, notice) => domainsPage(state, notice))(request))
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
