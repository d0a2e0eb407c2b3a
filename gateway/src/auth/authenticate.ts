import type { AccessClaims, AccessTokens } from "./access-tokens.ts";
import { bearerChallenge } from "./challenges.ts";
import type { AuthContext, GrantScope } from "./context.ts";
import { findGrant, touchGrant, type GrantView } from "./grants.ts";
import { revokedDescription } from "./revoked.ts";

export interface AccessIdentity {
  userId: string;
  email: string;
  emailVerified: boolean;
  name: string;
  grantId: string;
  clientId: string;
  clientName: string;
  scope: GrantScope;
}

export type BearerResult =
  | { ok: true; identity: AccessIdentity }
  | { ok: false; status: 401; wwwAuthenticate: string; error: string; description: string };

/** Short enough that a revocation made by another instance without a bus event still lands within seconds. */
const CACHE_MS = 5_000;
const LAST_USED_EVERY_MS = 60_000;
const MAX_ENTRIES = 10_000;

/** Insertion-ordered map that forgets its oldest entry past a size cap, so no traffic pattern grows it forever. */
class BoundedMap<V> extends Map<string, V> {
  override set(key: string, value: V): this {
    this.delete(key);
    super.set(key, value);
    if (this.size > MAX_ENTRIES) this.delete(this.keys().next().value as string);
    return this;
  }
}

export interface Authenticator {
  authenticate(authorization: string | null): Promise<BearerResult>;
  forget(grantId: string): void;
  /** The user changed (e.g. verified their email): drop every cached grant of theirs. */
  forgetUser(userId: string): void;
}

export function createAuthenticator(ctx: AuthContext, tokens: AccessTokens): Authenticator {
  const cache = new BoundedMap<{ at: number; grant: GrantView | null }>();
  // Verifying the signature is most of a cached call's cost; a verified token stays valid until its exp,
  // and the grant behind it is still checked on every call, so revocation keeps working at once.
  const verified = new BoundedMap<AccessClaims>();
  const lastTouched = new BoundedMap<number>();
  // Every 401 names the resource metadata and the scope of a full grant (challenges.ts).
  const refuse = (error: string, description: string): BearerResult =>
    error
      ? {
          ok: false,
          status: 401,
          error,
          description,
          wwwAuthenticate: bearerChallenge(ctx.config, { error, description }),
        }
      : { ok: false, status: 401, error: "unauthorized", description, wwwAuthenticate: bearerChallenge(ctx.config) };

  const loadGrant = async (grantId: string): Promise<GrantView | null> => {
    const hit = cache.get(grantId);
    if (hit && ctx.now() - hit.at < CACHE_MS) return hit.grant;
    const grant = await findGrant(ctx, grantId);
    cache.set(grantId, { at: ctx.now(), grant });
    return grant;
  };

  const verifyCached = async (token: string): Promise<AccessClaims | null> => {
    const hit = verified.get(token);
    if (hit) {
      if (hit.exp * 1000 > ctx.now()) return hit;
      verified.delete(token);
      return null;
    }
    const claims = await tokens.verify(token);
    if (claims) verified.set(token, claims);
    return claims;
  };

  const noteUse = (grantId: string) => {
    const now = ctx.now();
    if (now - (lastTouched.get(grantId) ?? 0) < LAST_USED_EVERY_MS) return;
    lastTouched.set(grantId, now);
    // Off the request path: a slow write must not slow every tool call.
    touchGrant(ctx, grantId).catch((error: unknown) =>
      ctx.logger.warn("last_used_at update failed", { grantId, error }),
    );
  };

  return {
    async authenticate(authorization) {
      const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization ?? "");
      if (!match?.[1]) return refuse("", "A bearer access token is required.");
      const claims = await verifyCached(match[1]);
      if (!claims) return refuse("invalid_token", "The access token is invalid or expired.");
      const grant = await loadGrant(claims.gid);
      if (!grant || grant.revoked || grant.userId !== claims.sub || grant.clientId !== claims.cid) {
        return refuse(
          "invalid_token",
          `The access token has been revoked. ${revokedDescription(ctx, grant?.revokedReason ?? null)}`,
        );
      }
      noteUse(grant.grantId);
      const { revoked: _revoked, revokedReason: _reason, ...identity } = grant;
      return { ok: true, identity };
    },
    forget(grantId) {
      cache.delete(grantId);
    },
    forgetUser(userId) {
      for (const [grantId, hit] of cache) if (hit.grant?.userId === userId) cache.delete(grantId);
    },
  };
}
