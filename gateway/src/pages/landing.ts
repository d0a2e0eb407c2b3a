import type { PublicUser } from "../auth/users.ts";
import { copyable, html, renderPage } from "./layout.ts";

/**
 * `GET /`: what Hatch is, how to connect an AI to it (the install page, the MCP URL), the developer reference, and
 * for a signed-in person their connections and an unverified email's reminder.
 */
export function landingPage(viewer: { user: PublicUser | null; csrfToken: string }, mcpUrl: string): string {
  const user = viewer.user;
  const verify =
    user && !user.emailVerified
      ? html`<p class="card">Your email is not verified yet: open the link Hatch mailed to <strong>${user.email}</strong>.
Until then invitations to it and apps shared with it stay closed to you. <a href="/verify-email">Send it again</a></p>`
      : "";
  const account = user
    ? html`<p>Signed in as <strong>${user.email}</strong>. <a href="/dashboard/tokens">See the AI clients connected to your account</a>.</p>${verify}`
    : html`<div class="actions"><a class="button" href="/signup">Create an account</a><a class="button secondary" href="/signin">Sign in</a></div>`;
  const body = html`<h1>Hatch</h1>
<p>Hatch publishes the web apps your AI builds. Ask your AI for an app (a todo list, a sign-up form, a small tool for
your team); it builds it and publishes it here, and you get a link to share. Each app has its own address, and you
choose who can open it: only you, your organization, people you name, or anyone.</p>
<h2>Connect your AI</h2>
<p>Hatch is an MCP server. Add it to Claude, ChatGPT, Cursor or VS Code with this URL; the first time your AI uses it
you sign in here and approve it.</p>
<p>${copyable(mcpUrl, "the MCP server URL")}</p>
<p><a href="/mcp">Step-by-step instructions for each AI client</a></p>
<h2>Build for Hatch</h2>
<p>The <a href="/mcp/docs">developer reference</a> says how an app is built and published, what it can store, and
its limits. Your AI reads the same text before it builds.</p>
<h2>Your account</h2>
${account}`;
  return renderPage({ title: "Hatch", user: user ? { email: user.email, csrfToken: viewer.csrfToken } : null, body });
}
