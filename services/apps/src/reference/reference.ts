import { formatBytes, planTableMarkdown, type DOCS_TOPICS } from "@hatch/contracts";
import { PUBLISH_LIMITS } from "../spec/limits.ts";
import { APIS } from "./reference-apis.ts";
import { AI_CALLS } from "./reference-ai.ts";
import { BROWSER_LIBRARY } from "./reference-browser.ts";
import { SERVER_CODE } from "./reference-server.ts";

// The developer reference: what `service_docs` returns and what `GET /mcp/docs` shows (the gateway asks for it with
// the `reference` rpc), from this one text.
// Written for an AI that follows it literally: say exactly what works today, and plainly what does not yet.

export type ReferenceTopic = (typeof DOCS_TOPICS)[number];

const L = PUBLISH_LIMITS;

/** Where this deployment serves apps, so the reference names real addresses; without it, a placeholder. */
export interface ReferenceSettings {
  /** The apps domain's bare origin, e.g. `https://apps.example` (apps open at `https://<address>.apps.example`). */
  appsOrigin?: string | null;
}

/** An app's origin under the configured apps origin: `https://apps.example` → `https://my-todo.apps.example`. */
function exampleAppOrigin(appsOrigin: string | null | undefined, address: string): string {
  if (!appsOrigin || !URL.canParse(appsOrigin)) return `https://${address}.<apps domain>`;
  const { protocol, host } = new URL(appsOrigin);
  return `${protocol}//${address}.${host}`;
}

const overview = (settings: ReferenceSettings) => `# Hatch developer reference

Hatch hosts small web apps. You build the app into a folder of static files, then publish that folder
with the \`publish\` tool. Each app gets its own address and origin, e.g. \`${exampleAppOrigin(settings.appsOrigin, "my-todo")}\`.

## Build the app

1. Make a static site: an \`index.html\` at the root of the output folder, plus its scripts, styles and assets.
   Any tool works (Vite, plain HTML, Bun.build). Publish the **output** folder (\`dist/\`, \`build/\`), never the
   sources or \`node_modules\`.
2. The app is served at the root of its own origin, so absolute paths like \`/assets/app.js\` work. With Vite
   keep the default \`base: "/"\`.
3. Give bundled assets content hashes in their names (Vite does: \`assets/index-B1a2C3d4.js\`). Hatch serves
   such files with a one-year immutable cache; everything else is revalidated on each visit.
4. Client-side routing (React Router, Vue Router, ...): add \`service.json\` with \`{"spa": true}\`.
5. Never put secret values, API keys or AI provider keys in the files. Published files are readable by
   everyone who can open the app.

## Publish

- **Any app (recommended): \`upload: true\`**. \`publish\` with \`upload: true\` (and \`address\`, or \`name\` and
  \`visibility\`) answers with a one-time URL and a command to run where the app was built, with \`dist\` replaced
  by the built folder: \`tar -C dist -cf - . | curl -sS --fail-with-body -T - '<url>'\` (tar and curl ship with macOS, Linux and
  Windows 10+; on Windows run it in cmd). It uploads the folder as a tar (plain or gzip), publishes it, and
  prints the app's address, URL and version. No file list passes through the conversation. A refused upload
  (no \`index.html\` at the root, a link, a path with \`..\`, a limit) says what to fix; run the command again.
  The URL works once and expires after ${L.uploadUrlTtlSeconds / 60} minutes.
- **Small apps (inline)**: \`publish\` with \`files\`: \`[{ "path": "index.html", "content": "<!doctype html>…" }]\`
  (\`encoding\` is \`utf8\` unless you say \`"base64"\`, for images, fonts and other binary files). At most
  ${L.maxInlineFiles} files and ${formatBytes(L.maxInlineBytes)} in all; over that, the call is refused: use \`upload: true\`.
- **SDKs and CI (manifest)**: \`publish\` with \`manifest\`: \`[{ "path": "assets/app.js", "sha256": "<64 hex>",
  "size": 1234 }, …]\` listing **every** file. The result has \`status: "needs_upload"\`, \`uploadUrl\` (a base),
  \`missing\` (paths) and \`uploadId\`: PUT each missing file's raw bytes to the base followed by its path
  (\`curl -sS --fail-with-body -T dist/assets/app.js '<uploadUrl>assets/app.js'\`), then call \`publish\` with \`uploadId\` alone; it
  answers \`status: "published"\`. Files Hatch already has are never asked for again, so a republish uploads
  only what changed.
- Paths: a leading \`/\` or \`./\` and backslashes are normalised (the answer says so); \`..\` is refused.
- **A new app**: leave out \`address\`. The user chooses the app's **name** and **who can see it**; never
  choose for them. If the client cannot ask them directly, the result says \`needs_user\`: ask the user, then
  call again with \`name\` and \`visibility\`.
- **A new version**: pass the app's \`address\` (see \`list_tools\`). Each publish creates a new immutable
  version and makes it current. Pass \`expectedVersion\` (the version you think is current) to be refused with
  a conflict instead of overwriting someone else's newer publish.
- Older versions stay: \`rollback\` makes one current again.

## Who can open an app (visibility)

| value | who |
| --- | --- |
| \`private\` | only the owner |
| \`org\` | everyone in the owner's organization |
| \`people\` | the owner and the people added by email with \`share\` |
| \`public\` | anyone with the link |

Viewers of a non-public app sign in to Hatch in the browser and come back to the app. Making an app public,
or creating one as public with \`publish\`, asks the user to confirm (in a company it also needs the
\`share_public\` permission). \`aiDiscoverable\` can be on only for public apps.

## Accounts with an unverified email

Anyone can sign up with any email address, so an address counts only once its owner proved it: by opening
the link Hatch mails at sign-up (the Hatch home page sends it again), or by accepting an invitation through
the link mailed to that address. Accounts an operator creates are verified. Until then the account does
everything with its own apps (publish, share, delete, create an organization), but nothing bound to its
email: \`list_tools\` does not show apps shared with that email (\`people\`), \`org\` does not list invitations
to it, and \`org_setup\` \`accept\` by invitation id is refused. When one of these is refused or empty for that
reason, tell the user to open the verification link in their mail, or the invitation link itself.

## Limits

| limit | value |
| --- | --- |
| files in one version | ${L.maxFiles.toLocaleString("en-US")} |
| size of one file | ${formatBytes(L.maxFileBytes)} |
| size of one version | ${formatBytes(L.maxTotalBytes)} |
| inline files per call | ${L.maxInlineFiles}, ${formatBytes(L.maxInlineBytes)} in all |
| app name | ${L.maxNameLength} characters |

Paths are relative to the folder and have no \`..\` parts. A folder without \`index.html\` at its root is refused.
`;

const SERVICE_JSON = `## service.json

An optional JSON file at the root of the published folder. It tells the app host how to serve the app.
Unknown keys are refused (so a typo is caught at publish time), and a bad file stops the publish before
anything is stored.

| key | type | default | meaning |
| --- | --- | --- | --- |
| \`spa\` | boolean | \`false\` | Single-page app: a path that matches no file and has no file extension is answered with \`/index.html\` (status 200) instead of the 404 page. |
| \`notFound\` | string | \`"404.html"\` if the folder has it | The page served with status 404 for a path that matches no file. Must be an \`.html\` file in the folder. |
| \`collections\` | object | none | Data collections for \`hatch.db(name)\`: name → \`{ read, create, update, delete }\` rules. See the browser library. |
| \`buckets\` | object | none | File buckets for \`hatch.files(name)\`: name → \`{ read, create, delete, maxFileSize }\`. See the browser library. |
| \`server\` | string | none | The server code module, e.g. \`"api/index.js"\` (a \`.js\`/\`.mjs\` file of the folder): it answers \`/api/…\`. See server code. |
| \`apis\` | object | none | Other services' HTTP APIs the app calls with a secret: name → \`{ url, secret, in, browser }\`. See Declared APIs below. |
| \`$schema\` | string | | Ignored; lets editors validate the file. |

Examples:

\`\`\`json
{ "spa": true }
\`\`\`

\`\`\`json
{ "notFound": "errors/missing.html" }
\`\`\`

How paths are served: \`/\` → \`index.html\`; \`/docs/\` → \`docs/index.html\`; \`/about\` → \`about.html\` or
\`about/index.html\`; anything else that matches no file → the SPA fallback when \`spa\` is true, else the
404 page.
`;

const PLANS = `## Plans and limits

What each plan allows; the \`billing\` tool says which plan the user's account is on. An action past a limit (a new app,
an invitation, data written by an app) is refused with \`needs_payment\` and a link to the billing settings page,
where the user upgrades; nothing is changed by the refused action. In the browser library the code is
\`needs_payment\` too (the app owner's plan is out of storage).

${planTableMarkdown()}

A paid plan that ends (canceled) or stops for non-payment (suspended) falls back to Free's limits; one whose
payment failed (past due) keeps its limits while the user fixes it. Card details are typed only on the payment
page the \`billing\` tool links to, never in the chat.
`;

const SECTIONS: Record<Exclude<ReferenceTopic, "all">, string> = {
  service_json: `${SERVICE_JSON}\n${APIS}`,
  browser_library: `${BROWSER_LIBRARY}\n${AI_CALLS}`,
  server_code: SERVER_CODE,
  plans: PLANS,
};

/** The reference in Markdown: the whole of it, or one topic; `settings` put this deployment's addresses in. */
export function developerReference(topic: ReferenceTopic = "all", settings: ReferenceSettings = {}): string {
  if (topic !== "all") return SECTIONS[topic];
  return [overview(settings), SERVICE_JSON, APIS, BROWSER_LIBRARY, AI_CALLS, SERVER_CODE, PLANS].join("\n");
}
