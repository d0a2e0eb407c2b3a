import { createHmac, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import { CLIENT_KINDS } from "./contracts/define.ts";

/**
 * The caller context the gateway signs for every bus call. Services verify it before anything else, so a
 * stranger on the bus cannot act as a user. Short-lived: it only has to outlive one call.
 */
export const CallContextSchema = z.object({
  v: z.literal(1),
  /** The user id (gateway's users table). */
  sub: z.string(),
  email: z.string(),
  name: z.string(),
  /** The account the user acts as, once orgs has resolved it. */
  account: z.string().optional(),
  accountKind: z.enum(["personal", "company"]).optional(),
  org: z.string().nullable().optional(),
  role: z.string().nullable().optional(),
  permissions: z.array(z.string()).default([]),
  /** "read": the user approved read-only access for this client; anything that changes is refused. */
  scope: z.enum(["read", "write"]),
  client: z.object({
    kind: z.enum(CLIENT_KINDS),
    name: z.string(),
    elicitation: z.object({ form: z.boolean(), url: z.boolean() }),
  }),
  grant: z.string(),
  rid: z.string(),
  iat: z.number(),
  exp: z.number(),
});
export type CallContext = z.infer<typeof CallContextSchema>;
export type CallContextClaims = Omit<CallContext, "v" | "iat" | "exp">;

export const CONTEXT_TTL_SECONDS = 120;

/** Derives an independent key per purpose from the one deployment secret. */
export function deriveKey(secret: string, purpose: string): Buffer {
  return createHmac("sha256", secret).update(`hatch:${purpose}`).digest();
}

export function signContext(claims: CallContextClaims, key: Buffer, nowMs = Date.now()): string {
  const iat = Math.floor(nowMs / 1000);
  const payload: CallContext = { v: 1, ...claims, iat, exp: iat + CONTEXT_TTL_SECONDS };
  const body = Buffer.from(JSON.stringify(payload)).toString("base64url");
  return `${body}.${mac(body, key)}`;
}

/** Returns the context, or null when the signature, shape or expiry is wrong. Never throws. */
export function verifyContext(token: string, key: Buffer, nowMs = Date.now()): CallContext | null {
  const dot = token.indexOf(".");
  if (dot <= 0) return null;
  const body = token.slice(0, dot);
  const given = Buffer.from(token.slice(dot + 1), "base64url");
  const expected = Buffer.from(mac(body, key), "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
  } catch {
    return null;
  }
  const result = CallContextSchema.safeParse(parsed);
  if (!result.success) return null;
  return result.data.exp * 1000 >= nowMs ? result.data : null;
}

function mac(body: string, key: Buffer): string {
  return createHmac("sha256", key).update(body).digest("base64url");
}
