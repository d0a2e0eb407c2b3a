import { createHmac } from "node:crypto";
import { z } from "zod";
import { CLIENT_KINDS } from "./contracts/define.ts";
import { openPayload, signPayload } from "./signed.ts";

/**
 * The caller context the gateway signs for every bus call. Services verify it before anything else, so a
 * stranger on the bus cannot act as a user. Short-lived: it only has to outlive one call.
 */
export const CallContextSchema = z.object({
  v: z.literal(1),
  /** The user id (gateway's users table). */
  sub: z.string(),
  email: z.string(),
  /**
   * The user opened the verification link mailed to `email` (or proved the address otherwise). Missing means
   * false: nothing bound to the email (invitations by id, apps shared with it) may match until it is true.
   */
  emailVerified: z.boolean().optional(),
  name: z.string(),
  /** The account the user acts as, once orgs has resolved it. */
  account: z.string().optional(),
  accountKind: z.enum(["personal", "company"]).optional(),
  org: z.string().nullable().optional(),
  /** The organization's name (answers say "Acme", never its id); missing when orgs did not give it. */
  orgName: z.string().nullable().optional(),
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
  return signPayload(payload, key);
}

/** Returns the context, or null when the signature, shape or expiry is wrong. Never throws. */
export function verifyContext(token: string, key: Buffer, nowMs = Date.now()): CallContext | null {
  const result = CallContextSchema.safeParse(openPayload(token, key));
  if (!result.success) return null;
  return result.data.exp * 1000 >= nowMs ? result.data : null;
}
