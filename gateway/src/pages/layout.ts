/**
 * The gateway's server-rendered HTML: an escaping `html` template tag, one page layout, and a Response helper
 * with the security headers every page needs. Pages work without JavaScript; the script every page carries (copy
 * buttons), and a page's own one where it has one (the logs page's live tail), are allowed by their hashes in the CSP
 * and only add to what is already there.
 */

/** A fragment already escaped (or built from escaped parts); `html` inserts it as it is. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** Marks trusted markup (constants written in this codebase only, never user input). */
export function raw(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

function interpolate(value: unknown): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(interpolate).join("");
  if (value === null || value === undefined || value === false) return "";
  return escapeHtml(value);
}

/** Template tag: every interpolated value is escaped unless it is SafeHtml; arrays are joined; null/false vanish. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0] ?? "";
  values.forEach((value, i) => {
    out += interpolate(value) + (strings[i + 1] ?? "");
  });
  return new SafeHtml(out);
}

/** The hidden field every form carries; the value comes from the CSRF cookie (see gateway/src/auth/sessions.ts). */
export function csrfField(token: string): SafeHtml {
  return html`<input type="hidden" name="csrf" value="${token}">`;
}

export interface PageOptions {
  title: string;
  body: SafeHtml;
  /** When signed in: shows the email, a Dashboard link, a sign-out button and the dashboard's sub-menu (a POST form needs the CSRF token). */
  user?: { email: string; csrfToken: string } | null;
  /** Where signing in or up leads afterwards (a pending authorization): the header's links carry it. */
  next?: string;
  /** A page's own script (the logs page's live tail), after the copy script; its response must allow it (pageScript). */
  script?: PageScript;
  /** Above the page's own content: the dashboard's account switcher. */
  above?: SafeHtml;
  /** Which link of the dashboard's sub-menu (shown on every page to a signed-in person) is this page's. */
  section?: DashboardSection;
}

/** The dashboard's sections, in the order of its sub-menu. */
export const DASHBOARD_SECTIONS = {
  apps: ["/dashboard", "Apps"],
  org: ["/dashboard/org", "Organization"],
  domains: ["/dashboard/domains", "Domains"],
  billing: ["/dashboard/billing", "Billing"],
  "ai-keys": ["/dashboard/ai-keys?scope=mine", "AI keys"],
  clients: ["/dashboard/tokens", "Connected clients"],
  settings: ["/dashboard/settings", "Settings"],
} as const;
export type DashboardSection = keyof typeof DASHBOARD_SECTIONS;

/** The sub-menu section of a dashboard path (an app's pages are under Apps). */
export function sectionOf(path: string): DashboardSection | undefined {
  const found = Object.entries(DASHBOARD_SECTIONS).find(
    ([key, [href]]) => key !== "apps" && (path === href.split("?")[0] || path.startsWith(`${href.split("?")[0]}/`)),
  );
  if (found) return found[0] as DashboardSection;
  return path === "/dashboard" || path.startsWith("/dashboard/apps/") ? "apps" : undefined;
}

/** The dashboard's sub-menu: on every page a signed-in person sees, the current section marked. */
export function dashboardMenu(current?: DashboardSection): SafeHtml {
  const links = Object.entries(DASHBOARD_SECTIONS).map(
    ([key, [href, label]]) => html`<a href="${href}"${key === current ? html` aria-current="page"` : ""}>${label}</a>`,
  );
  return html`<nav class="submenu" aria-label="Dashboard">${links}</nav>`;
}

/** A page's own script and the CSP source that allows it (its hash); `connect` lets it open a stream to this origin. */
export interface PageScript {
  text: string;
  source: string;
  connect: boolean;
}

export function pageScript(text: string, connect = false): PageScript {
  return { text, source: `'sha256-${new Bun.CryptoHasher("sha256").update(text).digest("base64")}'`, connect };
}

// Colours meet WCAG AA (4.5:1 for text, 3:1 for field borders) on both the page and a card, light and dark. Below
// 40rem tables become one card per row, each cell labelled by its column (labelTableCells writes data-label).
export const PAGE_STYLE = `
:root{color-scheme:light dark;--fg:#1d1d1f;--muted:#5f5f64;--bg:#fff;--card:#f5f5f7;--accent:#0057d9;--on-accent:#fff;--danger:#b71c1c;--border:#d2d2d7;--field:#7c7c82}
@media (prefers-color-scheme:dark){:root{--fg:#f5f5f7;--muted:#a1a1a6;--bg:#111;--card:#1c1c1e;--accent:#6ea8ff;--on-accent:#0b0b0c;--danger:#ff6b68;--border:#3a3a3c;--field:#8a8a8f}}
*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg);overflow-wrap:break-word}
header{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center;justify-content:space-between;padding:.75rem 1.25rem;border-bottom:1px solid var(--border)}
header a.brand{font-weight:700;text-decoration:none;color:var(--fg)}header nav{display:flex;flex-wrap:wrap;gap:.4rem 1rem;align-items:center;font-size:.9rem;min-width:0}
header nav .who{overflow-wrap:anywhere;min-width:0}header form{margin:0}
main{max-width:46rem;margin:2rem auto;padding:0 1.25rem}h1{font-size:1.6rem;margin:0 0 1rem;line-height:1.25}h2{line-height:1.3}
a{color:var(--accent)}.muted{color:var(--muted)}.card{background:var(--card);border-radius:12px;padding:1.25rem;margin:1rem 0}
.card>:first-child{margin-top:0}.card>:last-child{margin-bottom:0}
form.stack{display:grid;gap:.9rem;max-width:24rem}label{display:grid;gap:.3rem;font-weight:600}
input[type=email],input[type=password],input[type=text],input[type=number],input[type=url],select,textarea{font:inherit;max-width:100%;min-width:0;padding:.55rem .7rem;border:1px solid var(--field);border-radius:8px;background:var(--bg);color:var(--fg)}
label.choice{display:flex;flex-wrap:wrap;gap:.5rem;align-items:flex-start;font-weight:400;min-width:0}fieldset{border:1px solid var(--border);border-radius:8px;padding:.6rem .9rem;display:grid;gap:.4rem;min-width:0}legend{font-weight:600}
button,a.button{font:inherit;padding:.5rem 1rem;border-radius:8px;border:1px solid var(--accent);background:var(--accent);color:var(--on-accent);cursor:pointer;text-decoration:none;display:inline-block;text-align:center;max-width:100%;overflow-wrap:anywhere}
button.secondary,a.button.secondary{background:transparent;color:var(--accent)}button.danger{border-color:var(--danger);background:transparent;color:var(--danger)}
button.link{border:0;background:none;color:var(--accent);padding:0;text-decoration:underline}.actions{display:flex;flex-wrap:wrap;gap:.6rem;margin-top:1rem}.actions>*,label.choice>*{min-width:0;max-width:100%}
:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.error{border-left:4px solid var(--danger);padding:.5rem .9rem;background:var(--card);border-radius:6px}
table{width:100%;border-collapse:collapse}th,td{text-align:left;padding:.5rem .4rem;border-bottom:1px solid var(--border);vertical-align:top}
code{font-size:.9em;overflow-wrap:anywhere}
pre{background:var(--card);border:1px solid var(--border);border-radius:8px;padding:.75rem;margin:.75rem 0 .25rem;white-space:pre-wrap;overflow-wrap:anywhere}
pre code{font-size:.85rem}
button.copy{font-size:.85rem;padding:.2rem .7rem;margin:.25rem 0 .75rem;background:transparent;color:var(--accent)}
code+button.copy{margin:0 0 0 .4rem;vertical-align:baseline}
a.skip{position:absolute;left:.5rem;top:-3rem;padding:.4rem .8rem;background:var(--bg);color:var(--accent);border:2px solid var(--accent);border-radius:8px;z-index:10}a.skip:focus{top:.5rem}
nav.submenu{display:flex;flex-wrap:wrap;gap:.3rem 1.1rem;padding:.5rem 1.25rem;border-bottom:1px solid var(--border);font-size:.95rem}
nav.submenu a[aria-current=page]{font-weight:700;color:var(--fg)}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}
nav.toc ol{padding-left:1.25rem;margin:.25rem 0}
.switcher{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center;margin:0 0 1.25rem;padding:.5rem .75rem;border:1px solid var(--border);border-radius:10px}.switcher .choice{align-items:center}
ul.usage{list-style:none;padding:0}ul.usage li{margin:.6rem 0}.meter{display:block;width:100%;height:.6rem;border:1px solid var(--field);border-radius:6px;background:var(--bg);overflow:hidden}.meter>span{display:block;height:100%;background:var(--accent)}.meter.full>span{background:var(--danger)}
@media (max-width:40rem){main{margin:1.25rem auto;padding:0 1rem}header{padding:.6rem 1rem}nav.submenu{padding:.5rem 1rem}
svg.chart text{font-size:25px}
table,thead,tbody,tr,th,td{display:block}thead{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%)}
tr{border:1px solid var(--border);border-radius:10px;padding:.5rem .75rem;margin:.75rem 0}
td{border:0;padding:.25rem 0}td[data-label]{display:grid;grid-template-columns:minmax(6rem,35%) 1fr;gap:.75rem}
td[data-label]::before{content:attr(data-label);font-weight:600;color:var(--muted)}}
`;

/**
 * Copy buttons: after each code block, and after any element with class `copy` (a URL, a command), a button that
 * puts its text on the clipboard and says so (in a status line made on the first copy, so a page's own status
 * message stays the only one). The CSP allows exactly this text by its hash (COPY_SCRIPT_SOURCE).
 */
const COPY_SCRIPT = `(()=>{let status=null;const say=(text)=>{if(!status){status=document.createElement("p");status.className="visually-hidden";status.setAttribute("role","status");document.body.append(status)}status.textContent=text};
for(const el of document.querySelectorAll("main pre, main .copy")){const button=document.createElement("button");button.type="button";button.className="copy";
const what=el.dataset.copyLabel||(el.tagName==="PRE"?"this code":"this");const name="Copy "+what;button.textContent="Copy";button.setAttribute("aria-label",name);
button.addEventListener("click",async()=>{const text=el.textContent.replace(/\\n$/,"");try{await navigator.clipboard.writeText(text)}catch{const range=document.createRange();range.selectNodeContents(el);const selection=getSelection();selection.removeAllRanges();selection.addRange(range);document.execCommand("copy");selection.removeAllRanges()}
button.textContent="Copied";button.setAttribute("aria-label","Copied "+what);say("Copied "+what+" to the clipboard.");setTimeout(()=>{button.textContent="Copy";button.setAttribute("aria-label",name)},2000)});el.after(button)}})();`;

/** The CSP source that allows the copy script and nothing else. */
export const COPY_SCRIPT_SOURCE = `'sha256-${new Bun.CryptoHasher("sha256").update(COPY_SCRIPT).digest("base64")}'`;

/** A value the person will paste somewhere (a URL, a command): shown as code, with a copy button when scripts run. */
export function copyable(value: string, label: string): SafeHtml {
  return html`<code class="copy" data-copy-label="${label}">${value}</code>`;
}

/**
 * Gives each body cell of a table with a header row the text of its column header as `data-label`, so the narrow
 * layout can show a table as labelled cards. Works on this codebase's own markup (pages and the rendered reference).
 */
export function labelTableCells(markup: string): string {
  return markup.replace(/<table\b[^>]*>[\s\S]*?<\/table>/g, (table) => {
    const head = /<thead\b[^>]*>([\s\S]*?)<\/thead>/.exec(table);
    if (!head?.[1]) return table;
    const labels = [...head[1].matchAll(/<th\b[^>]*>([\s\S]*?)<\/th>/g)].map((m) =>
      (m[1] ?? "").replace(/<[^>]*>/g, "").trim(),
    );
    return table.replace(/<tr\b[^>]*>[\s\S]*?<\/tr>/g, (row) => {
      if (!row.includes("<td")) return row;
      let column = 0;
      return row.replace(/<td\b(?![^>]*data-label)/g, () => {
        const label = labels[column++];
        return label ? `<td data-label="${label.replaceAll('"', "&quot;")}"` : "<td";
      });
    });
  });
}

/** `path?next=…` when there is somewhere to go after signing in; the bare path otherwise. */
export function withNext(path: string, next: string | undefined, extra: Record<string, string> = {}): string {
  const query = new URLSearchParams({ ...(next ? { next } : {}), ...extra }).toString();
  return query ? `${path}?${query}` : path;
}

export function renderPage(options: PageOptions): string {
  const nav = options.user
    ? html`<span class="muted who">${options.user.email}</span><a href="/dashboard">Dashboard</a>
<form method="post" action="/signout">${csrfField(options.user.csrfToken)}<button class="link" type="submit">Sign out</button></form>`
    : html`<a href="${withNext("/signin", options.next)}">Sign in</a><a href="${withNext("/signup", options.next)}">Sign up</a>`;
  // The landing page is titled "Hatch" alone, never "Hatch · Hatch".
  const title = options.title === "Hatch" ? "Hatch" : `${options.title} · Hatch`;
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${title}</title><style>${raw(PAGE_STYLE)}</style></head>
<body><a class="skip" href="#main">Skip to content</a><header><a class="brand" href="/">Hatch</a><nav aria-label="Account">${nav}</nav></header>
${options.user ? dashboardMenu(options.section) : ""}<main id="main" tabindex="-1">${options.above ?? ""}${raw(labelTableCells(options.body.value))}</main><script>${raw(COPY_SCRIPT)}</script>${options.script ? html`<script>${raw(options.script.text)}</script>` : ""}</body></html>`
    .value;
}

/**
 * An HTML response with the headers every page needs: no framing (a framed consent page could be clickjacked),
 * no script but the copy buttons' (by its hash), no caching of pages that show account data, and no Referer (with its query string) sent to
 * other sites. "same-origin" rather than "no-referrer": under no-referrer, browsers send `Origin: null` on our
 * own form posts, which defeats the Origin check.
 */
export function htmlResponse(
  page: string | SafeHtml,
  init: { status?: number; headers?: HeadersInit; script?: PageScript } = {},
): Response {
  const headers = new Headers(init.headers);
  headers.set("Content-Type", "text/html; charset=utf-8");
  const scripts = init.script ? `${COPY_SCRIPT_SOURCE} ${init.script.source}` : COPY_SCRIPT_SOURCE;
  const connect = init.script?.connect ? "; connect-src 'self'" : "";
  headers.set(
    "Content-Security-Policy",
    `default-src 'none'; style-src 'unsafe-inline'; script-src ${scripts}; img-src 'self'${connect}; frame-ancestors 'none'; base-uri 'none'`,
  );
  headers.set("X-Frame-Options", "DENY");
  headers.set("X-Content-Type-Options", "nosniff");
  headers.set("Referrer-Policy", "same-origin");
  headers.set("Cache-Control", "no-store");
  return new Response(String(page), { status: init.status ?? 200, headers });
}
