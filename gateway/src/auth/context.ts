import type { Database, Logger } from "@hatch/shared";
import type { GatewayConfig } from "../config.ts";
import type { FailureThrottle } from "./throttle.ts";

/** What every part of the auth module shares; built once by createAuth. */
export interface AuthContext {
  config: GatewayConfig;
  db: Database;
  logger: Logger;
  now: () => number;
  fetchClientMetadata: typeof fetch;
  /** Every address of a host name (Client ID Metadata URLs are resolved once, then fetched at a checked address). */
  resolveHost: (hostname: string) => Promise<string[]>;
  /** HMAC key for CSRF tokens, derived from the deployment secret. */
  csrfKey: Buffer;
  /** Failed sign-ins per email. */
  signInThrottle: FailureThrottle;
  onUserCreated?: (user: { id: string; email: string; name: string }) => Promise<void>;
  /** Revokes in the database, drops the cached grant and tells the caller's hook (e.g. to publish a bus event). */
  revokeGrant(grantId: string, reason: string): Promise<void>;
}

/** Scope on a grant: "write" means full access, "read" read-only. The token's `scope` claim spells it out. */
export type GrantScope = "read" | "write";

export function scopeClaim(scope: GrantScope): string {
  return scope === "read" ? "read" : "read write";
}
