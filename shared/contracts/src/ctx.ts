import { createHmac } from "node:crypto";
import { z } from "zod";
import { CLIENT_KINDS } from "./tools/define.ts";
import { openPayload, signPayload } from "./signed.ts";

/**
 * The caller context the gateway signs for every bus call. Services verify it before anything else, so a
 * stranger on the bus cannot act as a user. Short-lived: it only has to outlive one call.
 */
export const CallContextSchema = z.object({
  /**
   * The context's version, negotiated per service (gateway/DESIGN.md, "Rolling deploys"): the gateway signs its
   * newest; a copy that does not read it answers with the versions it reads and the gateway signs again with the
   * newest both know. Within a version, fields are only added, as optional ones.
   */
  v: z.number().int().min(1),
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
/** The newest context version this build signs. */
export const CONTEXT_VERSION = 1;
/** The context versions this build's services read: the newest and the one before it, once there is one. */
export const CONTEXT_VERSIONS_READ: readonly number[] = [1];

/** Derives an independent key per purpose from the one deployment secret. */
export function deriveKey(secret: string, purpose: string): Buffer {
  return createHmac("sha256", secret).update(`hatch:${purpose}`).digest();
}

export function signContext(
  claims: CallContextClaims,
  key: Buffer,
  nowMs = Date.now(),
  version = CONTEXT_VERSION,
): string {
  const iat = Math.floor(nowMs / 1000);
  const payload: CallContext = { v: version, ...claims, iat, exp: iat + CONTEXT_TTL_SECONDS };
  return signPayload(payload, key);
}

/** Returns the context, or null when the signature, shape, version or expiry is wrong. Never throws. */
export function verifyContext(token: string, key: Buffer, nowMs = Date.now()): CallContext | null {
  const opened = openContext(token, key, CONTEXT_VERSIONS_READ, nowMs);
  return opened.ok ? opened.ctx : null;
}

export type OpenedContext =
  | { ok: true; ctx: CallContext }
  /** `version`: signed by the gateway, but in a version this copy does not read (a rolling deploy). */
  | { ok: false; reason: "invalid" | "expired" }
  | { ok: false; reason: "version"; version: number };

/**
 * Opens a call context and says why it cannot be used: a good signature on a version outside `read` is told apart
 * from a forgery, so the service can answer with the versions it reads. Never throws.
 */
export function openContext(
  token: string,
  key: Buffer,
  read: readonly number[] = CONTEXT_VERSIONS_READ,
  nowMs = Date.now(),
): OpenedContext {
  const payload = openPayload(token, key);
  if (payload === null) return { ok: false, reason: "invalid" };
  const version = (payload as { v?: unknown }).v;
  if (typeof version === "number" && Number.isInteger(version) && !read.includes(version))
    return { ok: false, reason: "version", version };
  const result = CallContextSchema.safeParse(payload);
  if (!result.success) return { ok: false, reason: "invalid" };
  return result.data.exp * 1000 >= nowMs ? { ok: true, ctx: result.data } : { ok: false, reason: "expired" };
}

/**
 * Which context version a process signs for each service: its newest, or the newest a copy of that service said it
 * reads (kept for a while, then the newest is tried again, so the version rises once every copy is upgraded).
 */
export class ContextVersions {
  private readonly lowered = new Map<string, { version: number; until: number }>();

  constructor(
    readonly newest = CONTEXT_VERSION,
    private readonly keepMs = 60_000,
  ) {}

  for(service: string, nowMs = Date.now()): number {
    const hit = this.lowered.get(service);
    if (!hit || hit.until < nowMs) return this.newest;
    return hit.version;
  }

  /** A copy reads only `read`: the version to sign again with, or null when none is known to both. */
  learn(service: string, read: readonly number[], nowMs = Date.now()): number | null {
    const common = read.filter((version) => version <= this.newest);
    if (common.length === 0) return null;
    const version = Math.max(...common);
    this.lowered.set(service, { version, until: nowMs + this.keepMs });
    return version;
  }
}
