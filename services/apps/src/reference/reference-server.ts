import { formatBytes } from "@hatch/contracts";
import { SERVER_LIMITS } from "../spec/server-code.ts";

// The server code topic of the developer reference (service_docs topic server_code). The limits come from
// SERVER_LIMITS, which the apps service enforces.

const S = SERVER_LIMITS;

export const SERVER_CODE_EXAMPLE = `export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/api/todos" && request.method === "POST") {
      if (!env.viewer) return Response.json({ error: "sign in first" }, { status: 401 });
      const todo = await env.db("todos").add({ title: (await request.json()).title, by: env.viewer.email });
      console.log("added", todo.id);
      return Response.json(todo, { status: 201 });
    }
    if (url.pathname === "/api/todos") return Response.json(await env.db("todos").list({ limit: 20 }));
    return new Response("not found", { status: 404 });
  },
};`;

export const SERVER_CODE = `## Server code

An app may run code on Hatch: name one ES module in \`service.json\` \`"server": "api/index.js"\` (a file of the
published folder). Every request to \`/api\` or a path under \`/api/\` on the app's origin (any method) goes to its
default export's \`fetch(request, env)\`, which returns a \`Response\`: the shape of Cloudflare Workers, Deno and
Val Town handlers. Pages call it with plain \`fetch("/api/…")\`. Requests reach the code only for viewers who may
open the app (as pages), and count toward the same per-viewer request limit as the data routes.

\`\`\`js
${SERVER_CODE_EXAMPLE}
\`\`\`

- **One bundled file.** \`import\` of anything fails; bundle dependencies in (\`bun build api/index.ts --outfile
  dist/api/index.js --target=browser --format=esm\`). A file that does not compile is refused at publish with
  its line. The module's source is never served to browsers.
- **Globals**: \`Request\`, \`Response\` (with \`Response.json\`), \`Headers\`, \`URL\`, \`URLSearchParams\`,
  \`TextEncoder\`/\`TextDecoder\` (UTF-8), \`atob\`/\`btoa\`, \`crypto.randomUUID\`/\`getRandomValues\`,
  \`setTimeout\`/\`setInterval\` (cleared when the request ends), \`console\`. Bodies are whole (no streams,
  no \`formData\`). There is no \`fetch\` (call APIs with \`env.api\`), no \`process\`, \`require\`, file system
  or environment variables.
- **Cookies** whose names start with \`hatch_\` (any case) are Hatch's: the request carries none, and a
  \`Set-Cookie\` that sets one is dropped. Other cookies pass both ways.

### env

| member | what it does |
| --- | --- |
| \`env.viewer\` | The signed-in viewer, verified by Hatch: \`{ email, name }\`, or \`null\` (also for requests from other origins). |
| \`env.db(name)\` | A collection of \`service.json\` \`collections\`, with the browser library's API (\`add\`, \`get\`, \`list\`, \`update\`, \`remove\`; no \`subscribe\`), acting as the app's **owner**: the rules are checked for the owner, documents it adds are created by the owner. |
| \`env.files(name)\` | A bucket of \`service.json\` \`buckets\`, as the owner: \`upload(content, { name, contentType })\` (a string or bytes), \`list\`, \`url\`, \`remove\`. |
| \`env.api(name, path, init)\` | A call to an API declared in \`service.json\` \`apis\`, with its secret added by Hatch; answers a \`Response\`. The secret never enters the code. |
| \`env.ai.chat({ messages, model })\` | An AI chat call paid by the app's AI key choice (\`tool_ai\`); answers \`{ content, model, usage }\`. |

A failed env call rejects with an \`Error\` named \`HatchError\` with \`code\` (the data routes' codes) and \`message\`.

### Limits

| limit | value |
| --- | --- |
| CPU time per request (waiting for env calls does not count) | ${S.cpuMsPerRequest} ms |
| CPU time per app, on average (then 429 with \`Retry-After\`) | ${S.cpuMsPerSecond} ms a second, ${S.cpuBurstMs.toLocaleString("en-US")} ms at once |
| time per request, waiting included (then 504) | ${S.requestSeconds} s |
| memory of the running code | ${formatBytes(S.memoryBytes)} |
| server module | ${formatBytes(S.maxModuleBytes)} |
| request body / response body | ${formatBytes(S.maxRequestBytes)} / ${formatBytes(S.maxResponseBytes)} |
| env calls per request | ${S.hostCallsPerRequest} |
| log lines per request / kept per app / characters per line | ${S.logLinesPerRequest} / ${S.logLinesKept.toLocaleString("en-US")} / ${S.logLineChars.toLocaleString("en-US")} |

Code stopped by a limit answers 500 (504 for time) with a short JSON error; the reason is in the logs. When Hatch
itself fails under a request (its sandbox restarted or failed), the answer is 503 with \`Retry-After\`, and it and the
log line say it was Hatch's failure and whether a retry is safe (it is unless the request had made env calls).

### Logs

\`console.debug\`, \`info\`, \`log\` (= info), \`warn\` and \`error\` lines become the app's log lines with time and
level, and so do uncaught errors (with their stack) and limit stops. The browser gets \`{ "error": { "code",
"message" } }\` without details. Read them with \`tool_logs\` (the owner only; \`level\` keeps that level and more
severe ones). Lines appear within a second or two.

### What persists between requests

A running copy of the code is kept warm and reused for later requests of the **same published version**:
module-level variables (a cache, a counter) survive between requests, for every viewer, until the copy is
replaced (after a limit stop, an idle while, or a new publish). Never keep one viewer's data in a module variable
for another's request, and never rely on it staying: keep what must last in \`env.db\`. \`env\`, timers and
pending calls belong to their request only.
`;
