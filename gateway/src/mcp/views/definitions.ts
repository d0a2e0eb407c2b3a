import {
  BillingSettingsSchema,
  rpcMethods,
  type BillingOutput,
  type BuyDomainOutput,
  type CustomDomainOutput,
  type CustomDomainsOutput,
  type FindDomainOutput,
  type ListToolsOutput,
  type PublishOutput,
  type ToolLogsOutput,
  type ToolStatsOutput,
} from "@hatch/contracts";
import { usageSection, planSentences } from "../../pages/billing-page.ts";
import { domainCard, offersTable, progress, STAGE_WORDS } from "../../pages/dashboard/domains.ts";
import { logLine } from "../../pages/dashboard/insight-views.ts";
import { forPeople } from "../../pages/dashboard/words.ts";
import { appCard, appPath, statsFigure, VISIBILITY } from "../../pages/dashboard/views.ts";
import { copyable, html, type SafeHtml } from "../../pages/layout.ts";
import { appAsListed, callServiceRpc, type CallerInfo, type ServiceClientDeps } from "../../services.ts";
import { LOG_TAIL_TOOL } from "./view-tools.ts";

// The views Hatch shows inside an AI client that takes MCP Apps (io.modelcontextprotocol/ui): one `ui://` resource
// each, named by its tools' `_meta.ui.resourceUri`. A view is drawn by the same markup functions as the dashboard's
// pages (pages/dashboard, pages/billing-page.ts), on the gateway, from the tool's whole answer; the HTML travels in the
// result's `_meta` (never in the model's context) and the view's script puts it on the page (client.ts).
//
// Actions inside a view are tool calls through the host: a `form[data-tool]` calls its tool with `data-args` and the
// form's fields, and the answer's view replaces the page; `[data-follow]` polls a tool and adds the rows it answers.
// A view never offers what needs the user's yes (buy, delete, make public): those stay questions the tool asks.

export interface ViewContext {
  deps: ServiceClientDeps;
  caller: CallerInfo;
  /** The gateway's public origin: the dashboard's links in a view lead there (a view has no origin of its own). */
  baseUrl: string;
}

export interface ViewDefinition {
  /** `ui://hatch/<name>` */
  name: string;
  title: string;
  description: string;
  /** The tools whose answers this view shows. */
  tools: readonly string[];
  /** Shows an app's own pages in a frame (the publish preview): its CSP allows the apps' origins as frames. */
  framesApps?: boolean;
  /** The view's markup for a tool's whole answer, or null when the answer has nothing to show (the text says it). */
  render(tool: string, data: unknown, input: Record<string, unknown>, ctx: ViewContext): Promise<SafeHtml | null>;
}

/** A select's options, `selected` chosen. */
const options = (choices: ReadonlyArray<readonly [string, string]>, selected: string) =>
  choices.map(
    ([value, label]) => html`<option value="${value}"${value === selected ? html` selected` : ""}>${label}</option>`,
  );

/** Arguments a view's form or button calls its tool with, as an attribute value. */
const args = (value: Record<string, unknown>) => JSON.stringify(value);

const publishView: ViewDefinition = {
  name: "publish",
  title: "Published app",
  description: "The app just published: a live preview, its version and who can open it.",
  tools: ["publish"],
  framesApps: true,
  async render(_tool, data, _input, ctx) {
    const out = data as PublishOutput;
    if (out.status === "needs_upload")
      return html`<h1>Publishing…</h1><p class="muted">The files are being uploaded; the app goes live once they are all there.</p>`;
    if (out.status === "needs_user") {
      const action = out.userAction;
      const go = action?.url
        ? html`<div class="actions"><a class="button" href="${action.url}">Continue on Hatch's page</a></div>`
        : "";
      return html`<h1>Waiting for your answer</h1><p>${forPeople(action?.message ?? "", "Nothing is published yet.")}</p>${go}`;
    }
    if (!out.address || !out.url) return null;
    // Its name and who can open it; without them (apps not answering) the view says less.
    const app = await appAsListed(ctx.deps, ctx.caller, out.address).catch(() => null);
    const who = app ? (VISIBILITY[app.visibility] ?? app.visibility) : null;
    // Only a public app opens without signing in to Hatch, which a frame in another site cannot do.
    const preview = !app
      ? ""
      : app.visibility === "public"
        ? html`<iframe class="preview" src="${out.url}" title="Preview of ${app.name}" loading="lazy" sandbox="allow-scripts allow-forms allow-same-origin"></iframe>`
        : html`<p class="muted">Its visitors sign in to Hatch first, so it is not previewed here: open it to see it.</p>`;
    return html`<h1>${app?.name ?? out.address} is live</h1>
<p>${copyable(out.url, "the app's address")}</p>
<p class="muted">Version ${out.version ?? "?"}${out.account ? html` · in ${out.account === "personal" ? "your personal account" : out.account}` : ""}${who ? html` · ${who}` : ""}</p>
${preview}
<div class="actions"><a class="button" href="${out.url}">Open the app</a><a class="button secondary" href="${appPath(out.address)}">Manage it</a></div>`;
  },
};

const appsView: ViewDefinition = {
  name: "apps",
  title: "Apps",
  description: "The user's apps and the apps shared with them.",
  tools: ["list_tools"],
  async render(_tool, data) {
    const apps = (data as ListToolsOutput).apps;
    const mine = apps.filter((a) => !a.sharedWithMe);
    const shared = apps.filter((a) => a.sharedWithMe);
    return html`<h1>Apps</h1><h2>Yours</h2>${mine.length ? mine.map(appCard) : html`<p class="muted">No apps yet.</p>`}
${shared.length ? html`<h2>Shared with you</h2>${shared.map(appCard)}` : ""}`;
  },
};

const STATS_DAYS = [7, 14, 30] as const;

const statsView: ViewDefinition = {
  name: "stats",
  title: "App statistics",
  description: "Opens and unique viewers of an app per day, as a chart.",
  tools: ["tool_stats"],
  async render(_tool, data) {
    const stats = data as ToolStatsOutput;
    const choice = options(
      STATS_DAYS.map((n) => [String(n), `${n} days`]),
      String(stats.days.length),
    );
    return html`<h1>Statistics of ${stats.address}</h1>${statsFigure(stats)}
<form class="inline" data-tool="tool_stats" data-args="${args({ address: stats.address })}"><label>Period<select name="days" data-number>${choice}</select></label><button type="submit" class="secondary">Show</button></form>`;
  },
};

const LEVELS = [
  ["", "All levels"],
  ["info", "Info and above"],
  ["warn", "Warnings and errors"],
  ["error", "Errors only"],
] as const;

const logsView: ViewDefinition = {
  name: "logs",
  title: "App logs",
  description: "What an app's server code logged, with a level filter, following new lines.",
  tools: ["tool_logs"],
  async render(_tool, data, input) {
    const logs = data as ToolLogsOutput;
    const level = typeof input.level === "string" ? input.level : "";

    const filter = html`<form class="inline" data-tool="tool_logs" data-args="${args({ address: logs.address })}" role="search" aria-label="Filter the log"><label>Level<select name="level">${options(LEVELS, level)}</select></label><button type="submit" class="secondary">Show</button></form>`;
    const follow = html`<label class="choice"><input type="checkbox" data-follow data-tool="${LOG_TAIL_TOOL}" data-args="${args({ address: logs.address, ...(level ? { level } : {}) })}" data-into="log-lines"> Follow new lines</label>`;
    const empty = logs.lines.length
      ? ""
      : html`<p class="muted">${level ? "No lines at this level." : "Nothing logged yet."}</p>`;
    return html`<h1>Logs of ${logs.address}</h1>${filter}${follow}${empty}<ol id="log-lines" class="logs" style="list-style:none;padding:0">${logs.lines.map(logLine)}</ol>
${logs.truncated ? html`<p class="muted">Older lines are on the dashboard's logs page.</p>` : ""}`;
  },
};

const domainView: ViewDefinition = {
  name: "domain",
  title: "Custom domain",
  description: "How far an app's own domain is: the DNS records to add, each with a copy button, and the steps after.",
  tools: ["custom_domain", "custom_domains"],
  async render(tool, data) {
    const address = (data as { address: string }).address;
    const domains =
      tool === "custom_domain"
        ? [(data as CustomDomainOutput).domain].filter((d) => d !== null)
        : (data as CustomDomainsOutput).domains;
    if (!domains.length)
      return html`<h1>Domains of ${address}</h1><p class="muted">This app is on no domain of yours.</p>`;
    const check = (hostname: string) =>
      html`<form data-tool="custom_domains" data-args="${args({ address })}"><button type="submit" class="secondary">Check ${hostname} again</button></form>`;
    return html`<h1>Domains of ${address}</h1><h2>Your domains for this app</h2>${domains.map((d) => domainCard(d, d.stage === "live" ? "" : check(d.hostname)))}`;
  },
};

const quoteView: ViewDefinition = {
  name: "domain-quote",
  title: "Domain prices",
  description: "Domains to buy with their first-year and renewal prices, and where a purchase stands.",
  tools: ["find_domain", "buy_domain"],
  async render(tool, data) {
    if (tool === "find_domain") {
      const { results } = data as FindDomainOutput;
      if (!results.length) return html`<h1>Domains</h1><p class="muted">Nothing found.</p>`;
      return html`<h1>Domains you could buy</h1>${offersTable(results, "Available", (r) =>
        r.available ? html`Yes` : html`<span class="muted">Taken</span>`,
      )}<p class="muted">Renewal is often priced higher than the first year. Nothing is bought until you confirm the price and the owner's details.</p>`;
    }
    const buy = data as BuyDomainOutput;
    const offer = offersTable([buy], "Where it is", () =>
      buy.status === "needs_user"
        ? html`Waiting for your confirmation`
        : html`${STAGE_WORDS[buy.stage ?? ""] ?? buy.stage}`,
    );
    const confirm =
      buy.status === "needs_user" && buy.userAction?.url
        ? html`<p>${forPeople(buy.userAction.message, "Nothing is bought yet.")}</p><p class="muted">Nothing is bought or charged before you confirm on Hatch's page.</p><div class="actions"><a class="button" href="${buy.userAction.url}">Continue on Hatch's page</a></div>`
        : "";
    const stage = buy.status === "bought" && buy.stage && buy.stage !== "registering" ? progress(buy.stage) : "";
    const renews = buy.renewsAt ? html`<p class="muted">Renews on ${buy.renewsAt.slice(0, 10)}.</p>` : "";
    return html`<h1>${buy.status === "bought" ? html`${buy.domain} is yours` : html`Buy ${buy.domain}`}</h1>${offer}${confirm}${stage}${renews}`;
  },
};

const billingView: ViewDefinition = {
  name: "billing",
  title: "Billing",
  description: "The account's plan, this month's usage against its limits, and where to change them.",
  tools: ["billing"],
  async render(_tool, data, _input, ctx) {
    const out = data as BillingOutput;
    // The limits are the billing page's (the tool's answer has the usage, not the plan's limits).
    const settings = await callServiceRpc(
      ctx.deps,
      "billing",
      rpcMethods.billing.settings,
      {},
      BillingSettingsSchema,
      ctx.caller,
    ).catch(() => null);
    // What the person should do, as a sentence; an alert only when a payment is in trouble.
    const urgent = out.state === "past_due" || out.state === "suspended";
    const todo = out.actionNeeded ? `To do: ${out.actionNeeded.replace(/\.?$/, ".")}` : null;
    const act = todo ? (urgent ? html`<p class="error" role="alert">${todo}</p>` : html`<p>${todo}</p>`) : "";
    const open = out.url ?? "/dashboard/billing";
    const body = settings
      ? html`${planSentences(settings, settings.accountKind === "company" ? "The organization" : "Your account")}${usageSection(settings)}`
      : html`<p>Plan: <strong>${out.plan}</strong>. This month so far: <strong>${out.usage.amountSoFar.formatted}</strong>.</p>`;
    return html`<h1>Billing</h1>${act}${body}<div class="actions"><a class="button" href="${open}">Open billing</a></div>`;
  },
};

export const VIEWS: readonly ViewDefinition[] = [
  publishView,
  appsView,
  statsView,
  logsView,
  domainView,
  quoteView,
  billingView,
];
