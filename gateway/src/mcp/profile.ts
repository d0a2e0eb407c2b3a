import { stripControlChars, type ClientKind } from "@hatch/contracts";

/** Characters kept of a client's self-declared name: it goes into every call context, log line and confirm page. */
export const CLIENT_NAME_MAX = 100;

/**
 * Reads the client's kind from its self-declared `clientInfo.name`. Names seen in the wild: `claude-ai`,
 * `claude-code`, `ChatGPT`, `openai-mcp`, `cursor-vscode`, `Visual Studio Code`. Matched loosely on purpose.
 */
export function clientKindOf(name: string | undefined): ClientKind {
  if (!name) return "other";
  if (/openai|chatgpt/i.test(name)) return "chatgpt";
  if (/claude|anthropic/i.test(name)) return "claude";
  if (/cursor/i.test(name)) return "cursor";
  if (/visual studio code|vscode|vs code|copilot/i.test(name)) return "vscode";
  if (/hatch-cli/i.test(name)) return "cli";
  return "other";
}

/**
 * The client's self-declared `clientInfo.name` as Hatch uses it everywhere: control characters removed, trimmed,
 * at most CLIENT_NAME_MAX characters (whole code points); "unknown" when nothing is left.
 */
export function clientNameOf(raw: string | undefined): string {
  // Cut first so a huge name costs nothing; a few extra characters cover the control characters removed.
  const cut = (raw ?? "").slice(0, CLIENT_NAME_MAX * 4);
  const known = cleanedNames.get(cut);
  if (known !== undefined) return known;
  const cleaned = stripControlChars(cut).trim();
  const name = Array.from(cleaned).slice(0, CLIENT_NAME_MAX).join("").trim() || "unknown";
  if (cleanedNames.size >= CLEANED_NAMES_MAX) cleanedNames.clear();
  cleanedNames.set(cut, name);
  return name;
}

/** Names already cleaned: every tool call asks a few times, and a deployment sees few distinct client names. */
const cleanedNames = new Map<string, string>();
const CLEANED_NAMES_MAX = 1_000;

export interface ElicitationSupport {
  form: boolean;
  url: boolean;
}

/** `elicitation: {}` means form mode only (backwards compatible); `{ url: {} }` adds URL mode. */
export function elicitationOf(capabilities: { elicitation?: Record<string, unknown> } | undefined): ElicitationSupport {
  const e = capabilities?.elicitation;
  if (!e) return { form: false, url: false };
  const keys = Object.keys(e);
  return { form: keys.length === 0 || "form" in e, url: "url" in e };
}
