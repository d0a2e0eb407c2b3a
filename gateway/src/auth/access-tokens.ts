import { jwt } from "@elysiajs/jwt";
import { randomId } from "@hatch/contracts";
import { z } from "zod";
import type { GatewayConfig } from "../config.ts";
import { scopeClaim, type GrantScope } from "./context.ts";

const ClaimsSchema = z.object({
  sub: z.string().min(1),
  gid: z.string().min(1),
  cid: z.string().min(1),
  jti: z.string().min(1),
  scope: z.enum(["read", "read write"]),
  exp: z.number(),
});
export type AccessClaims = z.infer<typeof ClaimsSchema>;

export interface AccessTokenSubject {
  userId: string;
  grantId: string;
  clientId: string;
  scope: GrantScope;
}

export interface AccessTokens {
  sign(subject: AccessTokenSubject, ttlSeconds?: number): Promise<{ token: string; expiresIn: number }>;
  /** The claims when signature, algorithm, issuer, audience and expiry all check out; null otherwise. */
  verify(token: string): Promise<AccessClaims | null>;
}

/** HS256 JWTs through @elysiajs/jwt, keyed by a purpose key so no other signed thing can pass as a token. */
export function createAccessTokens(config: GatewayConfig, key: Uint8Array, now: () => number): AccessTokens {
  const signer = jwt({ name: "accessJwt", secret: key, alg: "HS256", typ: "at+jwt" }).decorator.accessJwt;
  return {
    async sign(subject, ttlSeconds = config.accessTokenTtlSeconds) {
      const iat = Math.floor(now() / 1000);
      const token = await signer.sign({
        iss: config.baseUrl,
        sub: subject.userId,
        aud: config.mcpUrl,
        jti: randomId(12),
        gid: subject.grantId,
        cid: subject.clientId,
        scope: scopeClaim(subject.scope),
        exp: iat + ttlSeconds,
      });
      return { token, expiresIn: ttlSeconds };
    },
    async verify(token) {
      const payload = await signer.verify(token, {
        algorithms: ["HS256"],
        issuer: config.baseUrl,
        audience: config.mcpUrl,
        requiredClaims: ["exp", "sub", "jti"],
        currentDate: new Date(now()),
      });
      if (!payload) return null;
      const parsed = ClaimsSchema.safeParse(payload);
      return parsed.success ? parsed.data : null;
    },
  };
}
