import type { GatewayConfig } from "../config.ts";
import { SCOPES_SUPPORTED } from "./metadata.ts";

/**
 * The scopes a client asks for to use Hatch fully: the scope of a full grant. Named in every challenge (401 and 403),
 * so a client that follows the challenge (MCP 2026-07-28 "Scope Selection Strategy") asks for full access and the
 * person still chooses read-only on the consent page.
 */
export const FULL_SCOPE = SCOPES_SUPPORTED.join(" ");

/** RFC 6750 §3: `Bearer resource_metadata="…", scope="…"` plus the error and its description when there is one. */
export function bearerChallenge(config: GatewayConfig, error?: { error: string; description: string }): string {
  const challenge = `Bearer resource_metadata="${config.baseUrl}/.well-known/oauth-protected-resource/mcp", scope="${FULL_SCOPE}"`;
  if (!error) return challenge;
  // A quoted-string may not hold `"` or `\` unescaped; the descriptions are ours, but keep the header valid whatever.
  const description = error.description.replace(/["\\]/g, "'");
  return `${challenge}, error="${error.error}", error_description="${description}"`;
}

/**
 * RFC 6750 §3.1 / MCP 2026-07-28 "Runtime Insufficient Scope Errors": a read-only grant asked for something that
 * changes things. 403 with `error="insufficient_scope"` and the scopes that operation needs, so a client that does
 * step-up authorization asks the person for full access and tries again.
 */
export function insufficientScope(config: GatewayConfig, description: string): Response {
  return Response.json(
    { error: "insufficient_scope", error_description: description },
    {
      status: 403,
      headers: {
        "WWW-Authenticate": bearerChallenge(config, { error: "insufficient_scope", description }),
        "Cache-Control": "no-store",
      },
    },
  );
}
