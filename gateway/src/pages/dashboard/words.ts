import { TOOL_CONTRACTS } from "@hatch/contracts";
import { html, type SafeHtml } from "../layout.ts";

// A tool's text is written for an AI model (tool names, "give them the link", what to call next). A page is read by
// a person: forPeople() turns a tool's answer or refusal into their words before a page shows it, and linked() makes
// every URL in a text a link. The dashboard words test (test/dashboard-words.e2e.test.ts) reads every page for what
// must not be there.

/** Tool names that are not also plain English words (org, share, publish, billing, rollback are both). */
const TOOL_WORDS = TOOL_CONTRACTS.map((t) => t.name).filter((name) => name.includes("_") || name === "whoami");
const TOOL_NAME = new RegExp(`\\b(?:${TOOL_WORDS.join("|")})\\b`);

/** Sentences that speak to an AI or about the development server: left out of what a person reads. */
const FOR_AI = [
  TOOL_NAME,
  /bun run dev/,
  /\/dev\/outbox/,
  /\bCall\b.*\bagain\b/,
  /\bthe user picks\b/i,
  /\bTell your AI\b/i,
  /\bask your AI\b/i,
];

/** The sentences of `text` (a sentence ends at . ! or ? before a space or a line; URLs and decimals stay whole). */
function sentences(text: string): string[] {
  return text.split(/(?<=[.!?])\s+|\n+/);
}

/**
 * A tool's text in words for a person: no tool names, no instructions for an AI, no development-server notes.
 * `fallback`: what is said when every sentence was meant for an AI.
 */
export function forPeople(text: string, fallback = "Done."): string {
  const spoken = text
    .replace(/\s*\(give them the link\)/g, "")
    .replace(/\(no mail server is configured here:[^)]*\)/g, "")
    .replace(
      /\bThe user (can|adds|moves)\b/g,
      (_m, verb: string) => `You ${verb === "can" ? "can" : verb.slice(0, -1)}`,
    )
    .replace(/\bthe user moves\b/g, "you move")
    .replace(/\bThe user did not confirm\b/g, "You did not confirm")
    .replace(/\s{2,}/g, " ");
  const kept = sentences(spoken).filter((s) => !FOR_AI.some((pattern) => pattern.test(s)));
  return kept.join(" ").trim() || fallback;
}

const URL_PATTERN = /https?:\/\/[^\s<>"']+[^\s<>"'.,;:!?)]/g;

/** `text` escaped, with each http(s) URL in it as a link. */
export function linked(text: string): SafeHtml {
  const parts: SafeHtml[] = [];
  let at = 0;
  for (const match of text.matchAll(URL_PATTERN)) {
    parts.push(html`${text.slice(at, match.index)}<a href="${match[0]}">${match[0]}</a>`);
    at = (match.index ?? 0) + match[0].length;
  }
  parts.push(html`${text.slice(at)}`);
  return html`${parts}`;
}
