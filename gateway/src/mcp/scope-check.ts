import type { ToolGroup } from "@hatch/contracts";
import { contractFor, inGroups } from "./catalog.ts";
import { clientKindOf } from "./profile.ts";

/**
 * The tool a 2026-07-28 `tools/call` names when that tool changes things and nothing but the grant's read-only scope
 * stands in its way; null otherwise. Such a call is answered 403 `insufficient_scope` before it reaches the server
 * (challenges.ts), so a client that does step-up authorization asks the person for full access. A tool this client
 * does not see, or one outside the groups the URL chose, goes on to the server and gets its usual answer; so does a
 * connection opened with `read_only=true` (signing in again would not change that).
 */
export function writeOnReadGrant(body: unknown, groups: readonly ToolGroup[] | null): string | null {
  if (!body || typeof body !== "object" || Array.isArray(body)) return null;
  const { method, params } = body as { method?: unknown; params?: { name?: unknown; _meta?: unknown } };
  if (method !== "tools/call" || typeof params?.name !== "string") return null;
  const meta = (params._meta ?? {}) as Record<string, { name?: unknown } | undefined>;
  const clientName = meta["io.modelcontextprotocol/clientInfo"]?.name;
  const contract = contractFor(params.name, clientKindOf(typeof clientName === "string" ? clientName : undefined));
  if (!contract || contract.class === "read" || !inGroups(contract.name, groups)) return null;
  return contract.name;
}

/** What the 403 says (also its error_description): what was refused and what the user does about it. */
export function readGrantRefusal(tool: string): string {
  return `This connection was approved for read-only access, so "${tool}" (which changes things) was refused. Nothing was changed. To allow changes, the user approves full access when the client signs in again.`;
}
