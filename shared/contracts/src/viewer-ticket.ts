import { randomBytes } from "node:crypto";
import { z } from "zod";
import { AppAddressSchema } from "./tools/common.ts";
import { openPayload, signPayload } from "./signed.ts";

// Viewer tickets: how a person signed in on the gateway proves who they are to an app's own origin, which never
// sees the gateway's session cookie. The gateway signs a ticket for one app address and redirects the browser to
// `<app origin>/_hatch/auth?ticket=…`; the app host checks it, marks its nonce used and sets its own cookie.
// Both sides derive the key from the deployment secret: `deriveKey(secret, "viewer-ticket")`.
//
// The ticket (and the app cookie made from it) names the Hatch browser session it came from, not who the viewer
// is: on every request to a non-public app the app host asks the gateway who that session is now
// (`rpc.gateway.viewer.check`, cached briefly), so signing out of Hatch ends every app session of that browser and
// a change of membership counts at once.

/** Short: the ticket only has to survive one redirect, and it travels in a URL. */
export const VIEWER_TICKET_TTL_SECONDS = 60;

const TicketClaimsSchema = z.object({
  /** 2: bound to a browser session (1 carried email and account, trusted for the cookie's hour). */
  v: z.literal(2),
  /** Keeps a ticket from being accepted where another token signed with the same key is expected. */
  typ: z.literal("viewer-ticket"),
  sub: z.string().min(1),
  /**
   * The gateway's browser session: its id hash (`browser_sessions.id_hash`), never the session id itself, so a
   * ticket seen in a URL or a log cannot be turned into a Hatch session.
   */
  session: z.string().min(1),
  address: z.string().min(1),
  /** Single use: the app host records it (see services/apps host/auth-return.ts). */
  nonce: z.string().min(16),
  exp: z.number(),
});
export type ViewerTicketClaims = z.infer<typeof TicketClaimsSchema>;

/** What a ticket and the app cookie name: a user in one Hatch browser session. */
export interface ViewerSession {
  sub: string;
  session: string;
}

/** Who a viewer is now, as the gateway answers for a live session: the identity the visibility rule uses. */
export const ViewerIdentitySchema = z.object({
  sub: z.string().min(1),
  email: z.string().min(1),
  /** The person's display name (additive: absent from older gateways). */
  name: z.string().optional(),
  /** The account the viewer acts as (orgs' session), for apps visible to an organization. */
  account: z.string().min(1),
  /** Whether the email was proven (the `people` rule will want it); absent while users do not record it. */
  emailVerified: z.boolean().optional(),
  /**
   * Present when the question named an app (`ViewerCheckApp`): whether this person agreed that the app learns who
   * they are (the consent page of /apps/signin), given while the app had its owner now. A public app that is not the
   * viewer's own or their organization's sees no viewer without it.
   */
  consent: z.boolean().optional(),
});
export type ViewerIdentity = z.infer<typeof ViewerIdentitySchema>;

export function signViewerTicket(key: Buffer, viewer: ViewerSession & { address: string }, nowMs = Date.now()): string {
  const claims: ViewerTicketClaims = {
    v: 2,
    typ: "viewer-ticket",
    sub: viewer.sub,
    session: viewer.session,
    address: viewer.address,
    nonce: randomBytes(16).toString("base64url"),
    exp: Math.floor(nowMs / 1000) + VIEWER_TICKET_TTL_SECONDS,
  };
  return signPayload(claims, key);
}

export type ViewerTicketCheck =
  | { ok: true; claims: ViewerTicketClaims }
  | { ok: false; reason: "invalid" | "wrong_app" | "expired" };

/** Checks signature, shape, the app it was issued for and expiry. Single use is the caller's part. Never throws. */
export function verifyViewerTicket(key: Buffer, token: string, address: string, nowMs = Date.now()): ViewerTicketCheck {
  const claims = TicketClaimsSchema.safeParse(openPayload(token, key));
  if (!claims.success) return { ok: false, reason: "invalid" };
  if (claims.data.address !== address) return { ok: false, reason: "wrong_app" };
  if (claims.data.exp * 1000 < nowMs) return { ok: false, reason: "expired" };
  return { ok: true, claims: claims.data };
}

/**
 * `rpc.gateway.viewer.check` (answered by the gateway, asked by the app host): who a browser session is now. The
 * question is itself signed with the viewer key, so only a holder of the deployment secret (the apps service) can
 * ask: a stranger on the bus who saw a ticket's session and sub in some URL learns nothing (the call is refused,
 * `forbidden`). The answer is null when the session ended, expired or belongs to someone else.
 */
export const VIEWER_CHECK_TTL_SECONDS = 60;

/** The app a viewer check is for, when the answer must say whether the person agreed that it learns who they are. */
export const ViewerCheckAppSchema = z.object({ id: z.string().min(1), owner: z.string().min(1) });
export type ViewerCheckApp = z.infer<typeof ViewerCheckAppSchema>;

const CheckClaimsSchema = z.object({
  v: z.literal(1),
  typ: z.literal("viewer-check"),
  sub: z.string().min(1),
  session: z.string().min(1),
  /** Additive: with it the answer carries `consent` for this app (its id and current owner). */
  app: ViewerCheckAppSchema.optional(),
  exp: z.number(),
});

/** A viewer check question: a session, and optionally the app whose consent the answer must carry. */
export type ViewerCheckQuestion = ViewerSession & { app?: ViewerCheckApp };

export function signViewerCheck(key: Buffer, viewer: ViewerCheckQuestion, nowMs = Date.now()): string {
  return signPayload(
    {
      v: 1,
      typ: "viewer-check",
      sub: viewer.sub,
      session: viewer.session,
      ...(viewer.app ? { app: { id: viewer.app.id, owner: viewer.app.owner } } : {}),
      exp: Math.floor(nowMs / 1000) + VIEWER_CHECK_TTL_SECONDS,
    },
    key,
  );
}

/** The session asked about, when the question is signed with `key`, well formed and fresh; null otherwise. Never throws. */
export function openViewerCheck(key: Buffer, token: string, nowMs = Date.now()): ViewerCheckQuestion | null {
  const claims = CheckClaimsSchema.safeParse(openPayload(token, key));
  if (!claims.success || claims.data.exp * 1000 < nowMs) return null;
  const { sub, session, app } = claims.data;
  return app ? { sub, session, app } : { sub, session };
}

export const ViewerCheckInputSchema = z.object({ check: z.string().min(1).max(4096) });
export const ViewerCheckSchema = z.object({ viewer: ViewerIdentitySchema.nullable() });
export type ViewerCheck = z.infer<typeof ViewerCheckSchema>;

/**
 * `broadcast.gateway.viewer.changed`: the gateway says a browser session ended (`session`) or a person's
 * membership changed (`sub`); every app host drops what it cached about them.
 */
export const ViewerChangedSchema = z.union([
  z.object({ session: z.string().min(1) }),
  z.object({ sub: z.string().min(1) }),
]);
export type ViewerChanged = z.infer<typeof ViewerChangedSchema>;

/**
 * `rpc.apps.viewer.origin`: the gateway asks where an app is served before sending a viewer there. The origin is
 * computed from the address alone, so it is the same for a public, a private, a deleted and a never-created app.
 * `public` (additive) is present for a public app only, whose existence is no secret: what the consent page names
 * (the app, its owner) and what decides whether it is needed (the viewer's own app or their organization's).
 */
export const ViewerOriginInputSchema = z.object({
  address: AppAddressSchema,
  /** A non-current version's preview (its own origin, owner only): the answer is that preview's origin. */
  version: z.number().int().positive().max(999_999_999).optional(),
});

/**
 * What a preview's ticket and cookie are bound to instead of an address: `<address>.v<N>.preview`, which no app
 * address can equal (addresses have no dots), so neither opens the app or another version's preview.
 */
export const previewAudience = (address: string, version: number): string => `${address}.v${version}.preview`;
export const ViewerOriginSchema = z.object({
  origin: z.string().refine((v) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol)),
  public: z
    .object({
      id: z.string().min(1),
      name: z.string(),
      account: z.string().min(1),
      owner: z.object({ id: z.string().min(1), name: z.string() }),
    })
    .optional(),
});
export type ViewerOrigin = z.infer<typeof ViewerOriginSchema>;
