import { formatBytes } from "@hatch/contracts";
import { AI_LIMITS as A } from "../spec/server-code.ts";

// The developer reference's AI section (part of topic browser_library): hatch.ai.chat and env.ai.chat, who pays
// (ai_key, tool_ai), errors and limits. It must say what services/apps/src/ai/ does and hatch.d.ts declares.

const FENCE = "```";

export const AI_CALLS = `## AI calls (hatch.ai.chat)

A page asks an AI model through the app host; the host adds the AI provider key the app's owner chose, so the key
never reaches the page. Server code has the same call as \`env.ai.chat(request)\`, with the same answer and errors.
Providers speak the OpenAI chat completions format (the AI key page lists the providers this Hatch offers).

${FENCE}js
const reply = await hatch.ai.chat({
  model: "gpt-4o-mini",
  messages: [
    { role: "system", content: "Suggest one short title. Answer with the title only." },
    { role: "user", content: noteText },
  ],
  maxTokens: 30,
});
titleInput.value = reply.content; // also reply.model, reply.usage.inputTokens, reply.usage.outputTokens
${FENCE}

| field | meaning |
| --- | --- |
| \`messages\` | 1 to ${A.maxMessages} \`{ role: "system" \\| "user" \\| "assistant", content }\` |
| \`model\` | the provider's model name, e.g. \`gpt-4o-mini\` |
| \`provider\` | optional: which of the app's keys, e.g. \`openai\`; default its only key, else the oldest |
| \`temperature\` | optional, 0 to 2 |
| \`maxTokens\` | optional, the most tokens the answer may have |

HTTP: \`POST /_hatch/ai/chat\` with that JSON from the app's own pages answers \`{ content, model, usage }\`.

### Who pays: the key choice

1. \`ai_key\` \`{ "scope": "mine" | "company" | "tool", "address"?, "provider"? }\` returns a dashboard link where
   the user types the key in their browser. Never ask the user for a key in the chat and never put one in the
   app's files. \`mine\` = the user's own key; \`company\` = the organization's (owner or admin, company accounts
   only); \`tool\` = this app's own key (give \`address\`). \`action: "delete"\` with \`provider\` removes one after
   the user confirms.
2. \`tool_ai\` \`{ "address", "value": "company" | "mine" | "tool" | "none" }\` picks whose key pays. A new app
   has \`none\`: its AI calls are refused. When people other than the payer can open the app, the answer is
   \`needs_user\` with a \`costWarning\`: tell the user, and only if they accept call again with \`"acceptCost": true\`.
3. \`keyAvailable: false\` in its result means that key is not added yet: give the user \`ai_key\`'s link.

Each call's token counts are recorded as the app's AI usage.

### Errors and limits

| code | when |
| --- | --- |
| \`forbidden\` | AI calls are off (\`none\`), the chosen key is not added yet, the provider refused the key (add a new one with \`ai_key\`), or the request came from another site's page |
| \`invalid\` | a bad field, a model the provider does not know, or a request the provider refused |
| \`limit_exceeded\` | over ${A.callsPerViewerPerMinute} AI calls per viewer per minute, or the provider's own rate limit or quota |
| \`too_large\` | a request over ${formatBytes(A.maxRequestBytes)} |
| \`unavailable\` | the provider failed, was unreachable or took over ${A.timeoutSeconds} s |

| limit | value |
| --- | --- |
| messages per request | ${A.maxMessages} |
| request size (JSON) | ${formatBytes(A.maxRequestBytes)} |
| wait for the provider | ${A.timeoutSeconds} s |
| AI calls per viewer per app per minute | ${A.callsPerViewerPerMinute} |
`;
