import type { ClientKind } from "@hatch/shared";

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
