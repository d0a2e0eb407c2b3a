import type { Database, Logger } from "@hatch/platform";
import type { GatewayConfig } from "../config.ts";
import type { ClientDocumentCache } from "./client-documents.ts";
import type { AuthThrottles } from "./throttle.ts";

export interface PublicUser {
  id: string;
  email: string;
  name: string;
  /** The user proved the email is theirs (see verify-email.ts); until then nothing bound to it matches them. */
  emailVerified: boolean;
}

/** What every part of the auth module shares; built once by createAuth. */
export interface AuthContext {
  config: GatewayConfig;
  db: Database;
  logger: Logger;
  now: () => number;
  fetchClientMetadata: typeof fetch;
  /** Every address of a host name (Client ID Metadata URLs are resolved once, then fetched at a checked address). */
  resolveHost: (hostname: string) => Promise<string[]>;
  /** Client ID Metadata Documents fetched by this copy, each kept as long as its HTTP caching allows. */
  clientDocuments: ClientDocumentCache;
  /** HMAC key for CSRF tokens, derived from the deployment secret. */
  csrfKey: Buffer;
  /** Per-address limits on sign-in, sign-up and client registration; the per-email sign-in delay. */
  throttles: AuthThrottles;
  /** Waits before a sign-in attempt on an email that failed often (injected in tests: no real waiting). */
  sleep: (ms: number) => Promise<void>;
  onUserCreated?: (user: PublicUser) => Promise<void>;
  /** HMAC key of email verification links. */
  verifyEmailKey: Buffer;
  /** HMAC key of password reset links. */
  passwordResetKey: Buffer;
  /** Mails the user a password reset link (orgs); resolves to how it went out. Missing: mail cannot be sent. */
  sendPasswordResetMail?: (user: PublicUser, token: string) => Promise<"smtp" | "outbox">;
  /** Mails the user their verification link (orgs); resolves to how it went out. Missing: mail cannot be sent. */
  sendVerificationMail?: (user: PublicUser, token: string) => Promise<"smtp" | "outbox">;
  /** Drops the user's cached grants (their identity changed, e.g. a verified email). */
  forgetUser(userId: string): void;
  /** The user's identity changed (e.g. a verified email): app hosts drop what they cached about them. Must not throw. */
  onUserChanged?: (userId: string) => Promise<void>;
  /** A browser session ended (sign-out): its id hash, so app sessions bound to it end too. Must not throw. */
  onSessionEnded?: (sessionHash: string) => Promise<void>;
  /** Revokes in the database, drops the cached grant and tells the caller's hook (e.g. to publish a bus event). */
  revokeGrant(grantId: string, reason: string): Promise<void>;
}

/** Scope on a grant: "write" means full access, "read" read-only. The token's `scope` claim spells it out. */
export type GrantScope = "read" | "write";

export function scopeClaim(scope: GrantScope): string {
  return scope === "read" ? "read" : "read write";
}
