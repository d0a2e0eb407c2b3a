import { formatBytes } from "@hatch/contracts";
import { DEFAULT_API_PLACEMENT, SERVER_LIMITS } from "../spec/server-code.ts";

// The developer reference's section on declared APIs and their secrets (part of topic service_json). It must say what
// services/apps/src/apis/ does: the path rules, the headers passed, the limits, and how the owner sets a secret.

const FENCE = "```";
const placement = DEFAULT_API_PLACEMENT as { header: string; prefix: string };

export const APIS = `## Declared APIs and their secrets (service.json \`apis\`)

An app calls another service's HTTP API with a secret key without the key ever reaching the page, the published
files or the conversation: \`service.json\` declares the API and names its secret; the app host adds the secret to
each call. Nothing else leaves Hatch on the app's behalf.

${FENCE}json
{
  "apis": {
    "weather": { "url": "https://api.weather.example/v1", "secret": "WEATHER_KEY", "in": { "query": "appid" } },
    "crm": { "url": "https://api.crm.example", "secret": "CRM_TOKEN", "browser": "signed_in" }
  }
}
${FENCE}

| key | meaning |
| --- | --- |
| \`url\` | the API's base address (http or https, no \`?\` or \`#\`); every call stays under it |
| \`secret\` | the secret's name: letters, digits and \`_\`, e.g. \`WEATHER_KEY\` |
| \`in\` | where the secret goes: \`{ "header": "X-Api-Key" }\`, \`{ "header": "Authorization", "prefix": "Token " }\` or \`{ "query": "key" }\`; default \`{ "header": "${placement.header}", "prefix": "${placement.prefix}" }\` |
| \`browser\` | who may call it from the app's pages, a data rule (\`anyone\`, \`signed_in\`, \`org\`, \`owner\`; \`creator\` means signed in); default \`anyone\`. Server code always may |

**Setting the secret.** Never ask the user for the value and never put it in a file or a tool call. Call
\`tool_secret\` with the app's address and the secret's name: it returns a dashboard link; give it to the user, who
types the value there (the app's owner or a manager of its organization). \`tool_secret\` also tells whether a value
is set, and deletes one (\`action: "delete"\`, after the user confirms). Values are encrypted at rest and added to
a request only as it leaves. The page shows where the value goes (each API's \`url\` and \`in\`); the value is sent
only there. A publish that changes an API's \`url\` (host or base path) or \`in\` leaves that API without the value
until the owner confirms the new destination on the same page: its calls fail with \`unavailable\`, and publish and
\`tool_secret\` say which API waits and give the page. A secret set before the publish that declares its API is
confirmed there too. Values are at least 8 characters.

**Calling it.** From a page: \`const answer = await hatch.api("weather", "/current?city=Paris")\` (a \`Response\`; a
third argument like fetch's: \`{ method, headers, body }\`). From server code: \`await env.api("weather",
"/current?city=Paris")\`, the same. The path is appended to \`url\`; it may not climb out of it (\`..\`, encoded
\`/\`, another host) and may not carry the secret's header or query parameter. Sent on: \`Accept\`,
\`Accept-Language\`, \`Content-Type\`, \`Content-Language\`, \`If-Match\`, \`If-None-Match\`, \`If-Modified-Since\`,
\`Prefer\` and \`X-*\` headers; never cookies or \`Authorization\` from the page.

**The answer** is the API's own: its status, body and \`Content-Type\` (plus \`ETag\`, \`Last-Modified\`,
\`Retry-After\`, rate-limit headers). Redirects are not followed (a 3xx comes back without its \`Location\`). Any
occurrence of the secret in the answer is replaced with \`[secret]\`, also URL-encoded, JSON-escaped, hex, base64 or
base64url (never rely on an API echoing the key). When Hatch itself refuses, \`hatch.api\`
rejects with an error whose \`code\` says why (the HTTP answer carries \`X-Hatch-Error\`): \`not_found\` (no such
API in the current service.json), \`forbidden\` (the \`browser\` rule, or a private address), \`invalid\` (the
path or a header), \`too_large\`, \`unavailable\` (the secret is not set yet, or the owner has not confirmed the API's
new destination: \`tool_secret\` gives the page for either; or the API did not answer in time).

| limit | value |
| --- | --- |
| request body | ${formatBytes(SERVER_LIMITS.maxRequestBytes)} |
| answer body | ${formatBytes(SERVER_LIMITS.maxApiResponseBytes)} |
| wait for the answer | ${SERVER_LIMITS.apiTimeoutSeconds} s |
| apis in service.json | 20 |

The API must be on a public address: loopback, private and link-local addresses are refused.
`;
