import { and, desc, eq, exists, isNull, lt, ne, or } from "drizzle-orm";
import { randomId } from "@hatch/contracts";
import { authCodes, grants, oauthClients, refreshTokens, users } from "../db/schema.ts";
import type { AccessTokens } from "./access-tokens.ts";
import { scopeClaim, type AuthContext, type GrantScope } from "./context.ts";
import { newSecret, sha256Hex } from "./crypto.ts";

/** Authorization codes live one minute (OAuth 2.1 recommends short; clients exchange them at once). */
export const CODE_TTL_SECONDS = 60;

/** A grant with the user and client it joins; what `authenticate` and the token endpoint check. */
export interface GrantView {
  grantId: string;
  userId: string;
  email: string;
  /** The user's email is verified (read with the grant, so every signed call context carries it). */
  emailVerified: boolean;
  name: string;
  clientId: string;
  clientName: string;
  scope: GrantScope;
  revoked: boolean;
  /** Why it was revoked (see the grants table), null while live. */
  revokedReason: string | null;
}

export async function createGrant(
  ctx: AuthContext,
  input: { userId: string; clientId: string; scope: GrantScope; redirectUri?: string },
): Promise<string> {
  const id = `gr_${randomId(12)}`;
  await ctx.db.insert(grants).values({
    id,
    userId: input.userId,
    clientId: input.clientId,
    scope: input.scope,
    redirectUri: input.redirectUri ?? null,
  });
  return id;
}

/**
 * Approving a client again replaces its earlier connection: the user's other live grants of the same client end
 * once the new one has its tokens (so an abandoned approval never disconnects a working client). The same client is
 * the same client id, or a client registered again under the same name returning to the same redirect URI (the MCP
 * Inspector registers anew on every connect). Returns the grants it revoked.
 */
export async function replaceEarlierGrants(ctx: AuthContext, grantId: string): Promise<string[]> {
  const [current] = await ctx.db
    .select({
      userId: grants.userId,
      clientId: grants.clientId,
      redirectUri: grants.redirectUri,
      name: oauthClients.name,
    })
    .from(grants)
    .innerJoin(oauthClients, eq(oauthClients.clientId, grants.clientId))
    .where(eq(grants.id, grantId))
    .limit(1);
  if (!current) return [];
  const sameClient = current.redirectUri
    ? or(
        eq(grants.clientId, current.clientId),
        and(eq(oauthClients.name, current.name), eq(grants.redirectUri, current.redirectUri)),
      )
    : eq(grants.clientId, current.clientId);
  const earlier = await ctx.db
    .select({ id: grants.id })
    .from(grants)
    .innerJoin(oauthClients, eq(oauthClients.clientId, grants.clientId))
    .where(and(eq(grants.userId, current.userId), ne(grants.id, grantId), isNull(grants.revokedAt), sameClient));
  for (const { id } of earlier) await ctx.revokeGrant(id, "replaced");
  return earlier.map((e) => e.id);
}

export async function findGrant(ctx: AuthContext, grantId: string): Promise<GrantView | null> {
  const [row] = await ctx.db
    .select({
      grantId: grants.id,
      userId: users.id,
      email: users.email,
      emailVerifiedAt: users.emailVerifiedAt,
      name: users.name,
      clientId: oauthClients.clientId,
      clientName: oauthClients.name,
      scope: grants.scope,
      revokedAt: grants.revokedAt,
      revokedReason: grants.revokedReason,
    })
    .from(grants)
    .innerJoin(users, eq(users.id, grants.userId))
    .innerJoin(oauthClients, eq(oauthClients.clientId, grants.clientId))
    .where(eq(grants.id, grantId))
    .limit(1);
  if (!row) return null;
  const { revokedAt, revokedReason, scope, emailVerifiedAt, ...rest } = row;
  return {
    ...rest,
    emailVerified: emailVerifiedAt !== null,
    scope: scope === "read" ? "read" : "write",
    revoked: revokedAt !== null,
    revokedReason: revokedAt !== null ? (revokedReason ?? "unknown") : null,
  };
}

/** Marks the grant revoked once; the first reason wins. Returns whether this call revoked it. */
export async function markGrantRevoked(ctx: AuthContext, grantId: string, reason: string): Promise<boolean> {
  const done = await ctx.db
    .update(grants)
    .set({ revokedAt: new Date(ctx.now()), revokedReason: reason })
    .where(and(eq(grants.id, grantId), isNull(grants.revokedAt)))
    .returning({ id: grants.id });
  // Outstanding refresh tokens stay until they expire (the sweep deletes them): a client presenting one is told
  // why its connection ended rather than that its token is unknown.
  return done.length > 0;
}

export async function issueCode(
  ctx: AuthContext,
  input: { grantId: string; clientId: string; redirectUri: string; codeChallenge: string; resource: string },
): Promise<string> {
  const code = newSecret();
  await ctx.db.insert(authCodes).values({
    ...input,
    codeHash: sha256Hex(code),
    expiresAt: new Date(ctx.now() + CODE_TTL_SECONDS * 1000),
  });
  return code;
}

export interface TokenResponse {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  refresh_token: string;
  scope: string;
}

/** A new access token and a new refresh token under one grant. */
export async function issueTokens(
  ctx: AuthContext,
  tokens: AccessTokens,
  grant: GrantView,
  ttlSeconds?: number,
): Promise<TokenResponse> {
  const refresh = newSecret();
  const now = ctx.now();
  await ctx.db
    .delete(refreshTokens)
    .where(and(eq(refreshTokens.grantId, grant.grantId), lt(refreshTokens.expiresAt, new Date(now))));
  await ctx.db.insert(refreshTokens).values({
    tokenHash: sha256Hex(refresh),
    grantId: grant.grantId,
    expiresAt: new Date(now + ctx.config.refreshTokenTtlSeconds * 1000),
  });
  const access = await tokens.sign(
    { userId: grant.userId, grantId: grant.grantId, clientId: grant.clientId, scope: grant.scope },
    ttlSeconds,
  );
  return {
    access_token: access.token,
    token_type: "Bearer",
    expires_in: access.expiresIn,
    refresh_token: refresh,
    scope: scopeClaim(grant.scope),
  };
}

export interface ConnectedClient {
  grantId: string;
  clientName: string;
  clientId: string;
  registration: string;
  /** The redirect URI approved with this grant (null for older grants). */
  redirectUri: string | null;
  scope: GrantScope;
  createdAt: Date;
  lastUsedAt: Date | null;
}

/**
 * The user's live grants that were ever given tokens (a grant whose code was never exchanged connected nothing).
 * Refresh tokens are deleted on revocation, so "has a refresh token row" means "tokens were issued".
 */
export async function listConnectedClients(ctx: AuthContext, userId: string): Promise<ConnectedClient[]> {
  const rows = await ctx.db
    .select({
      grantId: grants.id,
      clientName: oauthClients.name,
      clientId: oauthClients.clientId,
      registration: oauthClients.registration,
      redirectUri: grants.redirectUri,
      scope: grants.scope,
      createdAt: grants.createdAt,
      lastUsedAt: grants.lastUsedAt,
    })
    .from(grants)
    .innerJoin(oauthClients, eq(oauthClients.clientId, grants.clientId))
    .where(
      and(
        eq(grants.userId, userId),
        isNull(grants.revokedAt),
        exists(
          ctx.db.select({ one: refreshTokens.grantId }).from(refreshTokens).where(eq(refreshTokens.grantId, grants.id)),
        ),
      ),
    )
    .orderBy(desc(grants.createdAt));
  return rows.map((r) => ({ ...r, scope: r.scope === "read" ? "read" : "write" }));
}

export async function touchGrant(ctx: AuthContext, grantId: string): Promise<void> {
  await ctx.db
    .update(grants)
    .set({ lastUsedAt: new Date(ctx.now()) })
    .where(eq(grants.id, grantId));
}
