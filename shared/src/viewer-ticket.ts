import { randomBytes } from "node:crypto";
import { z } from "zod";
import { AppAddressSchema } from "./contracts/common.ts";
import { openPayload, signPayload } from "./signed.ts";

// Viewer tickets: how a person signed in on the gateway proves who they are to an app's own origin, which never
// sees the gateway's session cookie. The gateway signs a ticket for one app address and redirects the browser to
// `<app origin>/_hatch/auth?ticket=…`; the app host checks it, marks its nonce used and sets its own cookie.
// Both sides derive the key from the deployment secret: `deriveKey(secret, "viewer-ticket")`.

/** Short: the ticket only has to survive one redirect, and it travels in a URL. */
export const VIEWER_TICKET_TTL_SECONDS = 60;

const TicketClaimsSchema = z.object({
  v: z.literal(1),
  /** Keeps a ticket from being accepted where another token signed with the same key is expected. */
  typ: z.literal("viewer-ticket"),
  sub: z.string().min(1),
  email: z.string().min(1),
  /** The account the viewer acts as (orgs' session), for apps visible to an organization. */
  account: z.string().min(1),
  address: z.string().min(1),
  /** Single use: the app host records it (see services/apps host/auth-return.ts). */
  nonce: z.string().min(16),
  exp: z.number(),
});
export type ViewerTicketClaims = z.infer<typeof TicketClaimsSchema>;

/** Who a ticket vouches for. */
export interface ViewerIdentity {
  sub: string;
  email: string;
  account: string;
}

export function signViewerTicket(key: Buffer, viewer: ViewerIdentity & { address: string }, nowMs = Date.now()): string {
  const claims: ViewerTicketClaims = {
    v: 1,
    typ: "viewer-ticket",
    sub: viewer.sub,
    email: viewer.email,
    account: viewer.account,
    address: viewer.address,
    nonce: randomBytes(16).toString("base64url"),
    exp: Math.floor(nowMs / 1000) + VIEWER_TICKET_TTL_SECONDS,
  };
  return signPayload(claims, key);
}

export type ViewerTicketCheck = { ok: true; claims: ViewerTicketClaims } | { ok: false; reason: "invalid" | "wrong_app" | "expired" };

/** Checks signature, shape, the app it was issued for and expiry. Single use is the caller's part. Never throws. */
export function verifyViewerTicket(key: Buffer, token: string, address: string, nowMs = Date.now()): ViewerTicketCheck {
  const claims = TicketClaimsSchema.safeParse(openPayload(token, key));
  if (!claims.success) return { ok: false, reason: "invalid" };
  if (claims.data.address !== address) return { ok: false, reason: "wrong_app" };
  if (claims.data.exp * 1000 < nowMs) return { ok: false, reason: "expired" };
  return { ok: true, claims: claims.data };
}

/**
 * `rpc.apps.viewer.origin`: the gateway asks where an app is served before sending a viewer there. The answer is
 * computed from the address alone, so it is the same for a public, a private, a deleted and a never-created app.
 */
export const ViewerOriginInputSchema = z.object({ address: AppAddressSchema });
export const ViewerOriginSchema = z.object({ origin: z.string().refine((v) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol)) });
export type ViewerOrigin = z.infer<typeof ViewerOriginSchema>;
