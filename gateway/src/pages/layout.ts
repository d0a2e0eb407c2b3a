/**
 * The gateway's server-rendered HTML: an escaping `html` template tag, one page layout, and a Response helper
 * with the security headers every page needs. Pages work without JavaScript; none is ever sent.
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
  /** When signed in: shows the email, a Tokens link and a sign-out button (a POST form needs the CSRF token). */
  user?: { email: string; csrfToken: string } | null;
  /** Where signing in or up leads afterwards (a pending authorization): the header's links carry it. */
  next?: string;
}

const STYLE = `
:root{color-scheme:light dark;--fg:#1d1d1f;--muted:#6e6e73;--bg:#fff;--card:#f5f5f7;--accent:#0a66ff;--danger:#c62828;--border:#d2d2d7}
@media (prefers-color-scheme:dark){:root{--fg:#f5f5f7;--muted:#a1a1a6;--bg:#111;--card:#1c1c1e;--accent:#4d8dff;--danger:#ef5350;--border:#3a3a3c}}
*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg)}
header{display:flex;gap:1rem;align-items:center;justify-content:space-between;padding:.75rem 1.25rem;border-bottom:1px solid var(--border)}
header a.brand{font-weight:700;text-decoration:none;color:var(--fg)}header nav{display:flex;gap:1rem;align-items:center;font-size:.9rem}
main{max-width:42rem;margin:2rem auto;padding:0 1.25rem}h1{font-size:1.6rem;margin:0 0 1rem}
a{color:var(--accent)}.muted{color:var(--muted)}.card{background:var(--card);border-radius:12px;padding:1.25rem;margin:1rem 0}
form.stack{display:grid;gap:.9rem;max-width:24rem}label{display:grid;gap:.3rem;font-weight:600}
input[type=email],input[type=password],input[type=text],input[type=number]{font:inherit;padding:.55rem .7rem;border:1px solid var(--border);border-radius:8px;background:var(--bg);color:var(--fg)}
label.choice{display:flex;gap:.5rem;align-items:center;font-weight:400}fieldset{border:1px solid var(--border);border-radius:8px;padding:.6rem .9rem;display:grid;gap:.4rem}legend{font-weight:600}
button,a.button{font:inherit;padding:.5rem 1rem;border-radius:8px;border:1px solid var(--accent);background:var(--accent);color:#fff;cursor:pointer;text-decoration:none;display:inline-block}
button.secondary{background:transparent;color:var(--accent)}button.danger{border-color:var(--danger);background:transparent;color:var(--danger)}
button.link{border:0;background:none;color:var(--accent);padding:0}.actions{display:flex;flex-wrap:wrap;gap:.6rem;margin-top:1rem}
.error{border-left:4px solid var(--danger);padding:.5rem .9rem;background:var(--card);border-radius:6px}
table{width:100%;border-collapse:collapse}th,td{text-align:left;padding:.5rem .4rem;border-bottom:1px solid var(--border);vertical-align:top}
code{font-size:.9em;word-break:break-all}
`;

/** `path?next=…` when there is somewhere to go after signing in; the bare path otherwise. */
export function withNext(path: string, next: string | undefined, extra: Record<string, string> = {}): string {
  const query = new URLSearchParams({ ...(next ? { next } : {}), ...extra }).toString();
  return query ? `${path}?${query}` : path;
}

export function renderPage(options: PageOptions): string {
  const nav = options.user
    ? html`<span class="muted">${options.user.email}</span><a href="/dashboard/tokens">Tokens</a>
<form method="post" action="/signout">${csrfField(options.user.csrfToken)}<button class="link" type="submit">Sign out</button></form>`
    : html`<a href="${withNext("/signin", options.next)}">Sign in</a><a href="${withNext("/signup", options.next)}">Sign up</a>`;
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${options.title} · Hatch</title><style>${raw(STYLE)}</style></head>
<body><header><a class="brand" href="/">Hatch</a><nav>${nav}</nav></header>
<main>${options.body}</main></body></html>`.value;
}

/**
 * An HTML response with the headers every page needs: no framing (a framed consent page could be clickjacked),
 * no scripts at all, no caching of pages that show account data, and no Referer (with its query string) sent to
 * other sites. "same-origin" rather than "no-referrer": under no-referrer, browsers send `Origin: null` on our
 * own form posts, which defeats the Origin check.
 */
export function htmlResponse(page: string | SafeHtml, init: { status?: number; headers?: HeadersInit } = {}): Response {
  const headers = new Headers(init.headers);
  headers.set("Content-Type", "text/html; charset=utf-8");
  headers.set(
    "Content-Security-Policy",
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'",
  );
  headers.set("X-Frame-Options", "DENY");
  headers.set("X-Content-Type-Options", "nosniff");
  headers.set("Referrer-Policy", "same-origin");
  headers.set("Cache-Control", "no-store");
  return new Response(String(page), { status: init.status ?? 200, headers });
}
