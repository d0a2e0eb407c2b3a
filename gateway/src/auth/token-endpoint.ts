import { isMcpResource } from "./authorize-request.ts";
import { and, eq, isNull } from "drizzle-orm";
import { authCodes, refreshTokens } from "../db/schema.ts";
import type { AccessTokens } from "./access-tokens.ts";
import type { AuthContext } from "./context.ts";
import { pkceMatches, safeEqual, sha256Hex } from "./crypto.ts";
import { findGrant, issueTokens, replaceEarlierGrants, type GrantView } from "./grants.ts";
import { revokedDescription } from "./revoked.ts";
import { jsonResponse, oauthError, readParams, type Params } from "./http.ts";

const NO_STORE = { "Cache-Control": "no-store", Pragma: "no-cache" };

/** POST /oauth/token (RFC 6749 §4.1.3, §6), form-encoded or JSON. */
export async function handleToken(ctx: AuthContext, tokens: AccessTokens, request: Request): Promise<Response> {
  const params = await readParams(request, ctx.config.maxBodyBytes);
  if (params.repeated.length)
    return oauthError("invalid_request", `Parameter sent more than once: ${params.repeated.join(", ")}.`);
  const grantType = params.get("grant_type");
  switch (grantType) {
    case "authorization_code":
      return exchangeCode(ctx, tokens, params);
    case "refresh_token":
      return rotateRefresh(ctx, tokens, params);
    case undefined:
      return oauthError("invalid_request", "grant_type is required.");
    default:
      return oauthError("unsupported_grant_type", "Use authorization_code or refresh_token.");
  }
}

async function issue(ctx: AuthContext, tokens: AccessTokens, grant: GrantView): Promise<Response> {
  return jsonResponse(await issueTokens(ctx, tokens, grant), 200, NO_STORE);
}

async function exchangeCode(ctx: AuthContext, tokens: AccessTokens, params: Params): Promise<Response> {
  const [code, verifier, clientId] = [params.get("code"), params.get("code_verifier"), params.get("client_id")];
  if (!code || !verifier || !clientId)
    return oauthError("invalid_request", "code, code_verifier and client_id are required.");
  const codeHash = sha256Hex(code);
  const [row] = await ctx.db.select().from(authCodes).where(eq(authCodes.codeHash, codeHash)).limit(1);
  if (!row) return oauthError("invalid_grant", "The authorization code is not valid.");
  if (row.used) {
    // A second use means the code leaked: end everything issued with it (OAuth 2.1 §4.1.3).
    await ctx.revokeGrant(row.grantId, "code_reuse");
    return oauthError(
      "invalid_grant",
      "The authorization code was already used; access granted with it has been revoked.",
    );
  }
  if (row.expiresAt.getTime() <= ctx.now()) return oauthError("invalid_grant", "The authorization code has expired.");
  if (!safeEqual(row.clientId, clientId))
    return oauthError("invalid_grant", "The authorization code was issued to another client.");
  const redirectUri = params.get("redirect_uri");
  if (redirectUri !== undefined && redirectUri !== row.redirectUri)
    return oauthError("invalid_grant", "redirect_uri does not match the authorization request.");
  const resource = params.get("resource");
  if (!isMcpResource(resource, row.resource))
    return oauthError("invalid_target", `The only resource here is ${ctx.config.mcpUrl}.`);
  if (!pkceMatches(verifier, row.codeChallenge))
    return oauthError("invalid_grant", "code_verifier does not match the code_challenge.");
  const consumed = await ctx.db
    .update(authCodes)
    .set({ used: true })
    .where(and(eq(authCodes.codeHash, codeHash), eq(authCodes.used, false)))
    .returning({ grantId: authCodes.grantId });
  if (consumed.length === 0) {
    await ctx.revokeGrant(row.grantId, "code_reuse");
    return oauthError(
      "invalid_grant",
      "The authorization code was already used; access granted with it has been revoked.",
    );
  }
  const grant = await findGrant(ctx, row.grantId);
  if (!grant || grant.revoked)
    return oauthError("invalid_grant", revokedDescription(ctx, grant?.revokedReason ?? null));
  const response = await issue(ctx, tokens, grant);
  await replaceEarlierGrants(ctx, grant.grantId);
  return response;
}

async function rotateRefresh(ctx: AuthContext, tokens: AccessTokens, params: Params): Promise<Response> {
  const token = params.get("refresh_token");
  if (!token) return oauthError("invalid_request", "refresh_token is required.");
  const tokenHash = sha256Hex(token);
  const [row] = await ctx.db.select().from(refreshTokens).where(eq(refreshTokens.tokenHash, tokenHash)).limit(1);
  if (!row) return oauthError("invalid_grant", "The refresh token is not valid.");
  // A revoked connection says so first, whatever else is wrong with the token (its tokens are kept until they expire).
  const grant = await findGrant(ctx, row.grantId);
  if (!grant || grant.revoked)
    return oauthError("invalid_grant", revokedDescription(ctx, grant?.revokedReason ?? null));
  const reused = async () => {
    // Rotation means a used token comes back only if someone copied it: end the grant for everyone.
    await ctx.revokeGrant(row.grantId, "refresh_reuse");
    return oauthError(
      "invalid_grant",
      "The refresh token was already used; this authorization has been revoked. Sign in again.",
    );
  };
  if (row.usedAt) return reused();
  if (row.expiresAt.getTime() <= ctx.now())
    return oauthError("invalid_grant", "The refresh token has expired. Sign in again.");
  const clientId = params.get("client_id");
  if (clientId !== undefined && clientId !== grant.clientId)
    return oauthError("invalid_grant", "The refresh token was issued to another client.");
  const resource = params.get("resource");
  if (!isMcpResource(resource, ctx.config.mcpUrl))
    return oauthError("invalid_target", `The only resource here is ${ctx.config.mcpUrl}.`);
  if (grant.scope === "read" && (params.get("scope") ?? "").split(" ").includes("write")) {
    return oauthError("invalid_scope", "This authorization is read-only.");
  }
  const consumed = await ctx.db
    .update(refreshTokens)
    .set({ usedAt: new Date(ctx.now()) })
    .where(and(eq(refreshTokens.tokenHash, tokenHash), isNull(refreshTokens.usedAt)))
    .returning({ grantId: refreshTokens.grantId });
  if (consumed.length === 0) return reused();
  return issue(ctx, tokens, grant);
}

/** POST /oauth/revoke (RFC 7009): a refresh or access token ends its whole grant. Unknown tokens still get 200. */
export async function handleRevoke(ctx: AuthContext, tokens: AccessTokens, request: Request): Promise<Response> {
  const params = await readParams(request, ctx.config.maxBodyBytes);
  const token = params.get("token");
  if (!token) return oauthError("invalid_request", "token is required.");
  const refreshFirst = params.get("token_type_hint") !== "access_token";
  const viaRefresh = async () =>
    (
      await ctx.db
        .select({ grantId: refreshTokens.grantId })
        .from(refreshTokens)
        .where(eq(refreshTokens.tokenHash, sha256Hex(token)))
        .limit(1)
    )[0]?.grantId;
  const viaAccess = async () => (await tokens.verify(token))?.gid;
  const grantId = refreshFirst
    ? ((await viaRefresh()) ?? (await viaAccess()))
    : ((await viaAccess()) ?? (await viaRefresh()));
  if (grantId) {
    const grant = await findGrant(ctx, grantId);
    const clientId = params.get("client_id");
    // A client may revoke only its own tokens (RFC 7009 §2.1); a mismatch is ignored, not reported.
    if (grant && (clientId === undefined || clientId === grant.clientId)) await ctx.revokeGrant(grantId, "client");
  }
  return new Response(null, { status: 200, headers: NO_STORE });
}
