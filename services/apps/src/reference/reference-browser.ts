import { formatBytes } from "@hatch/contracts";
import { DATA_ERROR_STATUS, DATA_LIMITS as D, DATA_RULES, DEFAULT_DATA_RULE } from "../spec/data-rules.ts";
import { EXAMPLE_APP } from "./example-app.ts";

// The developer reference's browser library section (topic browser_library). It must say exactly what
// services/apps/src/client/hatch.d.ts declares; services/apps/test/client-types.check.ts uses the library as shown here.

const FENCE = "```";
const code = (lang: string, text: string) => `${FENCE}${lang}\n${text}\n${FENCE}`;
const n = (value: number) => value.toLocaleString("en-US");

const RULE_WHO: Record<(typeof DATA_RULES)[number], string> = {
  anyone:
    "whoever can open the app: on a public app also people who are not signed in; on any other app only the signed-in people it is shared with",
  signed_in: "any viewer signed in to Hatch (who can open the app)",
  creator: "the signed-in viewer who created the document or file; for `read`, each viewer sees only their own",
  org: "signed-in members of the organization the app belongs to (for an app of a personal account: its owner)",
  owner: "the app's owner only",
};

const ERROR_MEANING: Record<keyof typeof DATA_ERROR_STATUS, string> = {
  forbidden: "a rule refused, or the viewer may not open the app: offer `hatch.signIn()` when `me()` is null",
  not_found: "no such document or file, or the collection or bucket is not declared in the current service.json",
  invalid: "bad input: a field name, a `where`, an `orderBy`, a cursor, a body that is not a JSON object",
  too_large: "a document or file over its limit",
  limit_exceeded: "too many requests, documents, files or open subscriptions: wait, or delete some",
  needs_payment: "the app owner's plan is out of storage: the message has the link where the owner upgrades",
  unavailable: "the network or Hatch is unreachable, or the app is paused: try again later",
};

export const BROWSER_LIBRARY = `## Browser library (/_hatch/client.js)

Every app origin serves Hatch's browser library: who the viewer is, data collections (JSON documents), file
buckets and calls to declared APIs, under rules declared in \`service.json\`. No keys in the page: the app host checks
every request against the rules, by the viewer Hatch signed in (never by anything the page sends).

### Include it

- Script tag, defines the global \`hatch\` (also the way to go with Vite or another bundler):
  \`<script src="/_hatch/client.js"></script>\`
- ES module, in a \`<script type="module">\`: \`import hatch, { me, signIn, db, files, api } from "/_hatch/client.mjs";\`
- TypeScript types: \`/_hatch/client.d.ts\` (the same on every app origin); save it as e.g. \`src/hatch.d.ts\`: the
  global \`hatch\` is typed, and \`import type { HatchDocument } from "./hatch"\` gives the types.

### Functions

All return promises except \`signIn\`, \`url\` and \`subscribe\`.

| call | result |
| --- | --- |
| \`hatch.me()\` | \`{ email, name } \\| null\`: the signed-in viewer of this app; on a public app, null until the viewer agreed on Hatch's page to share their name and email with it (never asked of the owner or their organization) |
| \`hatch.signIn()\` | goes to Hatch's sign-in (and, on a public app, that page) and back to this page |
| \`const todos = hatch.db("todos")\` | a collection declared in service.json (\`hatch.db<T>(name)\` in TypeScript) |
| \`todos.add(fields)\` | the new document |
| \`todos.get(id)\` | the document |
| \`todos.list({ where, orderBy, limit, after })\` | \`{ documents, next }\`; every option optional |
| \`todos.update(id, fields)\` | the document: the given top-level fields set, the others kept |
| \`todos.remove(id)\` | \`{ id, removed: true }\` |
| \`todos.subscribe(change => …, error => …)\` | a function that stops it; \`change\` is \`{ type: "added" \\| "updated" \\| "removed", id, document? }\` (no document for removed) |
| \`const photos = hatch.files("photos")\` | a bucket declared in service.json |
| \`photos.upload(fileOrBlob, { name })\` | \`{ id, name, size, contentType, createdAt, createdBy, url }\`; name defaults to the File's |
| \`photos.list({ limit, after })\` | \`{ files, next }\`, newest first |
| \`photos.url(id)\` | \`"/_hatch/files/photos/<id>"\` at once (no request): use it as \`<img src>\` or a link |
| \`photos.remove(id)\` | \`{ id, removed: true }\` |
| \`hatch.api("weather", "/current?city=Paris", { method, headers, body })\` | the API's own \`Response\`, the secret added by Hatch (service.json \`apis\`; see Declared APIs); the third argument is optional |

- A document is \`{ id, createdAt, updatedAt, createdBy, ...fields }\`: times are ISO strings, \`createdBy\` is the
  creator's email or null (added without signing in). Fields are any JSON object; top-level names are letters,
  digits and \`_\`, not starting with a digit (nested objects are free). \`id\`, \`createdAt\`, \`updatedAt\` and
  \`createdBy\` are kept by Hatch and ignored when written, so \`todos.update(doc.id, { ...doc, done: true })\` works.
- \`where\`: field → value for equality (string, number, boolean or null), or a range:
  \`{ done: false, priority: { ">=": 2, "<": 5 } }\` (operators \`<\`, \`<=\`, \`>\`, \`>=\`, \`==\`; a range matches only values
  of the same JSON type). Fields: your own top-level ones, \`createdAt\`, \`updatedAt\` (ISO strings), \`createdBy\` (email).
  All conditions must hold; at most ${D.maxWhereFields}. \`{ field: null }\` matches a stored null, not a missing field.
- \`orderBy\`: a field, smallest or oldest first; \`"-field"\` for the reverse. Default \`"createdAt"\`.
- \`limit\`: default ${D.defaultListLimit}, at most ${D.maxListLimit}. Paging: pass the page's \`next\` as \`after\` with the same
  \`where\` and \`orderBy\`; \`next\` is null on the last page.
- \`subscribe\` opens a live stream (server-sent events) of changes from that moment on, under the \`read\` rule
  (\`creator\`: only the viewer's own). It reconnects by itself; changes made while it was disconnected are not
  replayed, so \`list\` again when it matters. \`error\` is called when the stream is refused.

### Rules in service.json

${code(
  "json",
  `{
  "collections": {
    "todos": { "read": "creator", "create": "signed_in", "update": "creator", "delete": "creator" }
  },
  "buckets": {
    "photos": { "read": "anyone", "create": "signed_in", "delete": "creator", "maxFileSize": "5 MB" }
  }
}`,
)}

| rule | who may |
| --- | --- |
${DATA_RULES.map((rule) => `| \`${rule}\` | ${RULE_WHO[rule]} |`).join("\n")}

- Collections have \`read\`, \`create\`, \`update\`, \`delete\`; buckets have \`read\` (list and download), \`create\`
  (upload), \`delete\` and \`maxFileSize\` (bytes, or \`"500 KB"\`, \`"5 MB"\`).
- An operation without a rule is \`${DEFAULT_DATA_RULE}\`: nothing is open unless service.json says so. The owner gets
  nothing extra under the other rules.
- \`create\` cannot be \`creator\` (nobody has created anything yet).
- \`anyone\` never widens who can open the app: on a non-public app it still means the people the app is shared with.
- Names start with a letter and hold at most 64 letters, digits, \`_\` or \`-\`. A name not in the current
  service.json answers \`not_found\`.
- Data belongs to the app, not to a version: a new publish keeps it, deleting the app deletes it. A collection
  left out of service.json keeps its documents, but the app cannot reach them until it is declared again.
- Data can only be changed from the app's own pages; requests from other origins are refused.

### Limits

| limit | value |
| --- | --- |
| one document (as JSON) | ${formatBytes(D.maxDocumentBytes)} |
| documents per app (all collections) | ${n(D.maxDocumentsPerApp)} |
| one file | the bucket's \`maxFileSize\`: default ${formatBytes(D.defaultMaxFileSize)}, at most ${formatBytes(D.maxFileSize)} |
| files per app (all buckets) | ${n(D.maxFilesPerApp)}, ${formatBytes(D.maxFileBytesPerApp)} together |
| file name | ${D.maxFileNameLength} characters |
| collections, buckets in service.json | ${D.maxCollections}, ${D.maxBuckets} |
| data requests per viewer per minute | ${D.requestsPerViewerPerMinute} |
| open subscriptions per viewer | ${D.subscriptionsPerViewer} |

### Errors

Every failure rejects with an \`Error\` whose \`code\` is one of these and whose \`message\` tells a person what to do:
show the message. A network failure is \`unavailable\`.

| code | HTTP | when |
| --- | --- | --- |
${Object.entries(DATA_ERROR_STATUS)
  .map(([name, status]) => `| \`${name}\` | ${status} | ${ERROR_MEANING[name as keyof typeof DATA_ERROR_STATUS]} |`)
  .join("\n")}

${code(
  "js",
  `try {
  await todos.add({ text: "Buy milk", done: false });
} catch (error) {
  if (error.code === "forbidden" && !(await hatch.me())) hatch.signIn();
  else alert(error.message);
}`,
)}

### Security

- Whoever the \`read\` rule allows sees every field of a document or file, and whoever may \`create\` can write any
  fields. Never store secrets, API keys or passwords in documents or files.
- Documents are written by the app's users: show their text with \`textContent\`, never \`innerHTML\`, and check
  values before using them.
- Rules are checked by Hatch on every request; hiding a button protects nothing. Pick the narrowest rule
  (\`creator\` for private lists, \`org\` for a team).
- Uploaded files are served sandboxed; only images (not SVG), audio, video, PDF and plain text open in the
  browser, anything else downloads.
- \`tool_data\` shows you an app's counts, rules and newest documents.

### HTTP API

What the library calls, on the app's origin with the viewer's cookie. JSON bodies; errors are
\`{ "error": { "code", "message" } }\` with the HTTP status above.

| request | answer |
| --- | --- |
| \`GET /_hatch/me\` | \`{ email, name }\` or \`null\` |
| \`GET /_hatch/signin?path=/page\` | redirect to sign-in, then back to \`/page\` |
| \`POST /_hatch/db/<c>\` with a JSON object | 201, the document |
| \`GET /_hatch/db/<c>?where=<JSON>&orderBy=&limit=&after=\` | \`{ documents, next }\` |
| \`GET\`, \`PATCH\` (JSON object), \`DELETE /_hatch/db/<c>/<id>\` | the document; the document; \`{ id, removed }\` |
| \`GET /_hatch/db/<c>/_changes\` | \`text/event-stream\`: \`event: change\`, \`data: { type, id, document? }\` |
| \`POST /_hatch/files/<b>?name=<file name>\`, the bytes as body, \`Content-Type\` the file's | 201, the file |
| \`GET /_hatch/files/<b>?limit=&after=\` | \`{ files, next }\` |
| \`GET\`, \`DELETE /_hatch/files/<b>/<id>\` | the bytes; \`{ id, removed }\` |
| any method \`/_hatch/api/<name>/<path>?<query>\` | the API's answer; Hatch's own refusals carry \`X-Hatch-Error: <code>\` |

### Example: a todo list with a photo per item

Publish these two files. Each signed-in viewer keeps their own list; other tabs see changes live.

\`service.json\`:

${code("json", EXAMPLE_APP["service.json"])}

\`index.html\`:

${code("html", EXAMPLE_APP["index.html"])}
`;
