// The app host's own pages (not an app's files): unknown address, nothing published, paused, not allowed, errors.
// Plain server-rendered HTML without scripts; every dynamic value is escaped.

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

// Explicit colours on both schemes (never the browser's defaults, which some leave dark-on-dark): AA contrast.
const STYLE =
  ":root{color-scheme:light dark;--fg:#1d1d1f;--bg:#fff;--link:#0057d9}" +
  "@media (prefers-color-scheme:dark){:root{--fg:#f5f5f7;--bg:#111;--link:#6ea8ff}}" +
  "body{margin:0;font:16px/1.5 system-ui,-apple-system,'Segoe UI',sans-serif;color:var(--fg);background:var(--bg)}a{color:var(--link)}" +
  "main{max-width:36rem;margin:12vh auto;padding:0 1.25rem}h1{font-size:1.5rem;margin:0 0 .75rem}p{margin:.5rem 0}.muted{opacity:.7;font-size:.9rem}";

interface PageOptions {
  status: number;
  title: string;
  /** Paragraphs of plain text (escaped). */
  lines: string[];
  link?: { href: string; text: string };
  headers?: Record<string, string>;
}

export function hostPage(options: PageOptions): Response {
  const body = options.lines.map((line) => `<p>${escapeHtml(line)}</p>`).join("");
  const link = options.link
    ? `<p><a href="${escapeHtml(options.link.href)}">${escapeHtml(options.link.text)}</a></p>`
    : "";
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(options.title)}</title><style>${STYLE}</style></head><body><main><h1>${escapeHtml(options.title)}</h1>${body}${link}<p class="muted">Served by Hatch</p></main></body></html>`;
  return new Response(html, {
    status: options.status,
    headers: {
      "Content-Type": "text/html; charset=utf-8",
      "Content-Security-Policy":
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
      "X-Content-Type-Options": "nosniff",
      "Referrer-Policy": "no-referrer",
      "Cache-Control": "no-store",
      ...options.headers,
    },
  });
}

export const pages = {
  unknownHost: () => hostPage({ status: 404, title: "Not found", lines: ["There is nothing at this address."] }),
  root: (example: string) =>
    hostPage({
      status: 404,
      title: "Hatch apps",
      lines: [`Apps published with Hatch open on their own address, like ${example}.`],
    }),
  noApp: (address: string) =>
    hostPage({
      status: 404,
      title: "App not found",
      lines: [`There is no app called "${address}". Check the address, or ask whoever sent it to you.`],
    }),
  nothingPublished: () =>
    hostPage({
      status: 404,
      title: "Nothing published yet",
      lines: ["This app exists, but nothing has been published to it yet. Check back soon."],
    }),
  paused: () =>
    hostPage({
      status: 503,
      title: "This app is paused",
      lines: [
        "The organization that owns this app has paused it, so it cannot be opened right now.",
        "If you need it, ask the app's owner or an organization manager.",
      ],
    }),
  notFound: () => hostPage({ status: 404, title: "Page not found", lines: ["This app has no page at this address."] }),
  forbidden: (email: string, switchHref: string) =>
    hostPage({
      status: 403,
      title: "You don't have access to this app",
      lines: [
        `You are signed in as ${email}, and this app is not shared with that account.`,
        "Ask the app's owner to share it with you, or sign in with another account.",
      ],
      link: { href: switchHref, text: "Sign in as someone else" },
    }),
  /**
   * A refused viewer whose email is not verified: an app shared by email opens only for a verified address, so they are
   * told to verify it (whether this app is shared with that address is not said: the address is not proven theirs).
   */
  unverified: (email: string, verifyHref: string) =>
    hostPage({
      status: 403,
      title: "Verify your email to open this app",
      lines: [
        `You are signed in as ${email}, which is not verified yet.`,
        "Apps shared with an email address open once that address is verified: open the link in the mail Hatch sent you, or send it again.",
      ],
      link: { href: verifyHref, text: "Verify your email" },
    }),
  badTicket: (message: string, retryHref: string) =>
    hostPage({
      status: 400,
      title: "Sign-in did not complete",
      lines: [message],
      link: { href: retryHref, text: "Try signing in again" },
    }),
  badRequest: () => hostPage({ status: 400, title: "Bad request", lines: ["This address is not valid."] }),
  /** A version preview serves the version's files only: no data, files, server code, AI or declared APIs. */
  previewOnly: () =>
    hostPage({
      status: 403,
      title: "Not available in a preview",
      lines: ["A preview of an older version shows its pages only; the app's data and server code stay with the app."],
    }),
  methodNotAllowed: () =>
    hostPage({
      status: 405,
      title: "Method not allowed",
      lines: ["Published apps answer GET and HEAD requests only."],
      headers: { Allow: "GET, HEAD" },
    }),
  viewerUnknown: () =>
    hostPage({
      status: 503,
      title: "Hatch could not check who you are",
      lines: [
        "Hatch could not check who you are; try again in a minute.",
        "This app is not public, so it is only shown once Hatch knows you may see it.",
      ],
      headers: { "Retry-After": "30" },
    }),
  unavailable: () =>
    hostPage({
      status: 503,
      title: "Temporarily unavailable",
      lines: ["This app cannot be served right now. Try again in a moment."],
      headers: { "Retry-After": "5" },
    }),
  filesUnavailable: () =>
    hostPage({
      status: 503,
      title: "This app's files are not available",
      lines: [
        "This server cannot read this app's files right now. Try again in a moment.",
        "If it keeps happening, tell the app's owner.",
      ],
      headers: { "Retry-After": "30" },
    }),
  failed: () =>
    hostPage({
      status: 500,
      title: "Something went wrong",
      lines: ["This app could not be served. Try again; if it keeps happening, tell the app's owner."],
    }),
};
