import { accountSettings, type AccountSettings } from "./account-settings.ts";
import { deriveKey } from "@hatch/contracts";
import { type Database, type Logger, type RateCounter } from "@hatch/platform";
import type { Elysia } from "elysia";
import type { GatewayConfig } from "../config.ts";
import { createAccessTokens, type AccessTokens } from "./access-tokens.ts";
import { sweepExpired, type SweepResult } from "./sweep.ts";
import { AuthThrottles } from "./throttle.ts";
import { createAuthenticator, type AccessIdentity, type Authenticator, type BearerResult } from "./authenticate.ts";
import { ClientDocumentCache } from "./client-documents.ts";
import { resolveHostAddresses } from "./client-metadata.ts";
import { CLI_CLIENT, ensureCliClient } from "./clients.ts";
import type { AuthContext } from "./context.ts";
import { cookieHeaders, readForm } from "./forms.ts";
import { AuthInputError } from "./errors.ts";
import { createGrant, findGrant, issueTokens, markGrantRevoked } from "./grants.ts";
import type { Params } from "./http.ts";
import { buildRoutes } from "./routes.ts";
import { endSession, readBrowserState, type BrowserState } from "./sessions.ts";
import { createUser, findUserByEmail, type PublicUser } from "./users.ts";
import { markEmailVerified } from "./verify-email.ts";

export { AuthInputError, CLI_CLIENT, cookieHeaders };
export type { AccessIdentity, BearerResult, BrowserState, Params, PublicUser };

/** The browser side of sign-in, for pages outside this module (the confirm page, the app viewer sign-in). */
export interface BrowserPages {
  /** Who is signed in, the CSRF token for the page's forms, and cookies the response must set. */
  state(request: Request): Promise<BrowserState>;
  /** A POSTed form with its browser state, or the page refusing it when the CSRF check fails. */
  form(request: Request): Promise<{ params: Params; state: BrowserState } | { refused: Response }>;
  /** Ends the browser's session; returns the Set-Cookie header value that clears it. */
  signOut(state: BrowserState): Promise<string>;
}

export interface AuthDeps {
  config: GatewayConfig;
  db: Database;
  logger: Logger;
  onUserCreated?: (user: PublicUser) => Promise<void>;
  /** Mails the user the link that verifies their email (the gateway wires it to orgs); resolves to how it went out. */
  sendVerificationMail?: (user: PublicUser, token: string) => Promise<"smtp" | "outbox">;
  /** Mails the user a link that sets a new password (the gateway wires it to orgs); resolves to how it went out. */
  sendPasswordResetMail?: (user: PublicUser, token: string) => Promise<"smtp" | "outbox">;
  /** Called after a user's identity changed (a verified email); awaited, must not throw. */
  onUserChanged?: (userId: string) => Promise<void>;
  /** Called after a browser session ended (sign-out, switching accounts) with its id hash; awaited, must not throw. */
  onSessionEnded?: (sessionHash: string) => Promise<void>;
  /** Called after a grant was revoked in this process (pages, refresh reuse, revocation endpoint): publish it to other instances. */
  onGrantRevoked?: (grantId: string, reason: string) => void | Promise<void>;
  /** Injectable for tests: fetches Client ID Metadata Documents. */
  fetchClientMetadata?: typeof fetch;
  /** Injectable for tests: every address of a host name (default: the system resolver). */
  resolveHost?: (hostname: string) => Promise<string[]>;
  /** Shared by gateway copies (JetStream key-value on NATS) so the sign-in throttles hold across them; memory when absent. */
  rateCounter?: RateCounter;
  now?: () => number;
  /** Injectable for tests: the per-email sign-in delay waits through it. */
  sleep?: (ms: number) => Promise<void>;
}

export interface Auth {
  /** Every OAuth, well-known and page route; mount with `app.use(auth.routes)`. */
  routes: Elysia;
  /**
   * Verifies `Authorization: Bearer …`: signature, expiry, iss, aud, grant not revoked, user exists. Grant and user
   * lookups are cached up to 5 s; revokeGrant and forgetGrant drop the entry at once.
   */
  authenticate(authorization: string | null): Promise<BearerResult>;
  /** Another gateway instance revoked this grant: stop trusting the cached copy. */
  forgetGrant(grantId: string): void;
  /**
   * Throws AuthInputError (message fit for the user) on a bad email, short password or taken email. `verified`:
   * the caller vouches for the address (admin user:create); otherwise it waits for the mailed link.
   */
  createUser(
    input: { email: string; password: string; name: string },
    options?: { verified?: boolean },
  ): Promise<PublicUser>;
  /** Marks the email verified while it is still the user's (an invitation link to it was used); false otherwise. */
  markEmailVerified(userId: string, email: string): Promise<boolean>;
  /** For scripts and tests: a grant for the built-in "hatch-cli" client and its tokens. Throws AuthInputError for an unknown email. */
  issueTokenForScript(input: {
    email: string;
    readOnly?: boolean;
    ttlSeconds?: number;
  }): Promise<{ accessToken: string; refreshToken: string; grantId: string }>;
  revokeGrant(grantId: string, reason: string): Promise<void>;
  /** Deletes expired codes, sessions and refresh tokens; the gateway runs it every few minutes. */
  sweepExpired(): Promise<SweepResult>;
  pages: BrowserPages;
  /** A signed-in person's own name and password (/dashboard/settings). */
  account: AccountSettings;
  /** Who a grant acts as, read fresh (no cache); null when the grant is unknown or revoked. */
  identityForGrant(grantId: string): Promise<AccessIdentity | null>;
}

function validateDeps(deps: AuthDeps): void {
  const { config } = deps;
  if (config.secret.length < 32) throw new Error("createAuth: config.secret must be at least 32 characters");
  if (config.mcpUrl !== `${config.baseUrl}/mcp`) throw new Error("createAuth: config.mcpUrl must be `${baseUrl}/mcp`");
  if (!URL.canParse(config.baseUrl) || config.baseUrl.endsWith("/"))
    throw new Error("createAuth: config.baseUrl must be an origin without a trailing slash");
}

async function issueTokenForScript(
  ctx: AuthContext,
  tokens: AccessTokens,
  input: { email: string; readOnly?: boolean; ttlSeconds?: number },
) {
  const user = await findUserByEmail(ctx, input.email);
  if (!user) throw new AuthInputError(`No Hatch user has the email ${input.email}.`);
  await ensureCliClient(ctx);
  const grantId = await createGrant(ctx, {
    userId: user.id,
    clientId: CLI_CLIENT.clientId,
    scope: input.readOnly ? "read" : "write",
  });
  const grant = await findGrant(ctx, grantId);
  if (!grant) throw new Error("grant vanished right after it was created");
  const issued = await issueTokens(ctx, tokens, grant, input.ttlSeconds);
  ctx.logger.info("token issued for script", { userId: user.id, grantId, scope: grant.scope });
  return { accessToken: issued.access_token, refreshToken: issued.refresh_token, grantId };
}

export function createAuth(deps: AuthDeps): Auth {
  validateDeps(deps);
  const logger = deps.logger.child({ component: "auth" });
  let authenticator: Authenticator | undefined;
  const ctx: AuthContext = {
    config: deps.config,
    db: deps.db,
    logger,
    now: deps.now ?? Date.now,
    fetchClientMetadata: deps.fetchClientMetadata ?? fetch,
    resolveHost: deps.resolveHost ?? resolveHostAddresses,
    clientDocuments: new ClientDocumentCache(deps.now ?? Date.now),
    csrfKey: deriveKey(deps.config.secret, "csrf"),
    verifyEmailKey: deriveKey(deps.config.secret, "verify-email"),
    sendVerificationMail: deps.sendVerificationMail,
    passwordResetKey: deriveKey(deps.config.secret, "password-reset"),
    sendPasswordResetMail: deps.sendPasswordResetMail,
    forgetUser: (userId) => authenticator?.forgetUser(userId),
    throttles: new AuthThrottles(deps.rateCounter, logger, deps.now ?? Date.now),
    sleep: deps.sleep ?? ((ms) => Bun.sleep(ms)),
    onUserCreated: deps.onUserCreated,
    onSessionEnded: deps.onSessionEnded,
    onUserChanged: deps.onUserChanged,
    async revokeGrant(grantId, reason) {
      const revokedNow = await markGrantRevoked(ctx, grantId, reason);
      authenticator?.forget(grantId);
      if (!revokedNow) return;
      logger.info("grant revoked", { grantId, reason });
      try {
        await deps.onGrantRevoked?.(grantId, reason);
      } catch (error) {
        logger.error("onGrantRevoked failed", { grantId, error });
      }
    },
  };
  const tokens = createAccessTokens(deps.config, deriveKey(deps.config.secret, "access-token"), ctx.now);
  authenticator = createAuthenticator(ctx, tokens);
  const routes = buildRoutes(ctx, tokens) as unknown as Elysia;
  return {
    routes,
    authenticate: authenticator.authenticate,
    forgetGrant: authenticator.forget,
    createUser: (input, options) => createUser(ctx, input, options),
    markEmailVerified: (userId, email) => markEmailVerified(ctx, userId, email),
    issueTokenForScript: (input) => issueTokenForScript(ctx, tokens, input),
    revokeGrant: (grantId, reason) => ctx.revokeGrant(grantId, reason),
    sweepExpired: () => sweepExpired(ctx),
    account: accountSettings(ctx),
    pages: {
      state: (request) => readBrowserState(ctx, request),
      form: (request) => readForm(ctx, request),
      signOut: (state) => endSession(ctx, state),
    },
    async identityForGrant(grantId) {
      const grant = await findGrant(ctx, grantId);
      if (!grant || grant.revoked) return null;
      const { revoked: _revoked, revokedReason: _reason, ...identity } = grant;
      return identity;
    },
  };
}
