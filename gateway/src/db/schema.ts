import { sql } from "drizzle-orm";
import {
  boolean,
  check,
  index,
  json,
  jsonb,
  pgSchema,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from "drizzle-orm/pg-core";

/** The gateway's own schema: people, their browser sessions, OAuth clients, grants and tokens, pending confirmations. */
export const gateway = pgSchema("gateway");

const created = () => timestamp("created_at", { withTimezone: true }).notNull().defaultNow();

export const users = gateway.table(
  "users",
  {
    id: text("id").primaryKey(),
    email: text("email").notNull(),
    name: text("name").notNull(),
    /** Bun.password (argon2id). */
    passwordHash: text("password_hash").notNull(),
    /** When the user proved `email` is theirs (the mailed link, an invitation link to it, or an admin); null = not yet. */
    emailVerifiedAt: timestamp("email_verified_at", { withTimezone: true }),
    createdAt: created(),
  },
  (t) => [uniqueIndex("users_email_lower").on(sql`lower(${t.email})`)],
);

/** Browser sign-in sessions (dashboard, consent). Only the SHA-256 of the cookie value is stored. */
export const browserSessions = gateway.table(
  "browser_sessions",
  {
    idHash: text("id_hash").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    createdAt: created(),
  },
  (t) => [index("browser_sessions_user").on(t.userId)],
);

/**
 * OAuth clients: registered dynamically (RFC 7591) or known by a Client ID Metadata Document URL.
 * Public clients only: no client secret exists anywhere.
 */
export const oauthClients = gateway.table("oauth_clients", {
  clientId: text("client_id").primaryKey(),
  /** "dynamic" (RFC 7591), "metadata" (client id is the URL of its metadata document), "builtin" (admin CLI). */
  registration: text("registration").notNull(),
  name: text("name").notNull(),
  redirectUris: jsonb("redirect_uris").$type<string[]>().notNull(),
  metadata: jsonb("metadata").$type<Record<string, unknown>>().notNull(),
  fetchedAt: timestamp("fetched_at", { withTimezone: true }),
  createdAt: created(),
});

/** One approval of one client by one user. Revoking it ends every token issued under it. */
export const grants = gateway.table(
  "grants",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    clientId: text("client_id")
      .notNull()
      .references(() => oauthClients.clientId),
    /** "write" (full) or "read" (read-only, chosen on the consent page). */
    scope: text("scope").notNull(),
    /** The redirect URI the user approved (null for grants made before it was kept, and for the CLI). */
    redirectUri: text("redirect_uri"),
    createdAt: created(),
    lastUsedAt: timestamp("last_used_at", { withTimezone: true }),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
    /** Why it was revoked: "user", "replaced", "password_reset", "refresh_reuse", "code_reuse", "client", "admin". */
    revokedReason: text("revoked_reason"),
  },
  (t) => [index("grants_user").on(t.userId)],
);

/** Authorization codes: single use, short-lived, bound to client, redirect URI, PKCE challenge and resource. */
export const authCodes = gateway.table("auth_codes", {
  codeHash: text("code_hash").primaryKey(),
  grantId: text("grant_id")
    .notNull()
    .references(() => grants.id, { onDelete: "cascade" }),
  clientId: text("client_id").notNull(),
  redirectUri: text("redirect_uri").notNull(),
  codeChallenge: text("code_challenge").notNull(),
  resource: text("resource").notNull(),
  expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
  used: boolean("used").notNull().default(false),
});

/** Refresh tokens, rotated on every use. A used one presented again revokes the whole grant. */
export const refreshTokens = gateway.table(
  "refresh_tokens",
  {
    tokenHash: text("token_hash").primaryKey(),
    grantId: text("grant_id")
      .notNull()
      .references(() => grants.id, { onDelete: "cascade" }),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    usedAt: timestamp("used_at", { withTimezone: true }),
    createdAt: created(),
  },
  (t) => [index("refresh_tokens_grant").on(t.grantId)],
);

/**
 * Questions a service asked whose client could not show a form, kept until the signed-in user answers them on
 * `/confirm/<id>`. The id is the unguessable part of the link; moving out of `pending` happens once.
 */
export const pendingConfirmations = gateway.table(
  "pending_confirmations",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** The grant the AI client called under; confirming acts under it, so a revoked grant cannot confirm. */
    grantId: text("grant_id")
      .notNull()
      .references(() => grants.id, { onDelete: "cascade" }),
    clientKind: text("client_kind").notNull(),
    clientName: text("client_name").notNull(),
    service: text("service").notNull(),
    tool: text("tool").notNull(),
    /** The validated tool input, sent again unchanged: the confirm token is bound to it. */
    input: jsonb("input").notNull(),
    message: text("message").notNull(),
    /** The flat form (QuestionSchema's `schema`); json, not jsonb, so its fields keep the service's order. */
    schema: json("schema").$type<Record<string, unknown>>().notNull(),
    confirmToken: text("confirm_token").notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    /** "pending", then once "confirmed" or "cancelled". */
    state: text("state").notNull().default("pending"),
    /** What the service answered (its result text or error message) after the user confirmed. */
    result: text("result"),
    /** How the user's answer ended: "done", "failed" (the service refused: `result` says why) or "declined". */
    outcome: text("outcome"),
    /** When the AI client was told the outcome (on its next tool call under the grant); null = not yet. */
    reportedAt: timestamp("reported_at", { withTimezone: true }),
    createdAt: created(),
    decidedAt: timestamp("decided_at", { withTimezone: true }),
  },
  (t) => [
    index("pending_confirmations_expires").on(t.expiresAt),
    // Outcomes the grant's next tool call still has to carry: small, since each is told once.
    index("pending_confirmations_unreported")
      .on(t.grantId)
      .where(sql`${t.outcome} is not null and ${t.reportedAt} is null`),
    check("pending_confirmations_state", sql`${t.state} in ('pending', 'confirmed', 'cancelled')`),
    check("pending_confirmations_outcome", sql`${t.outcome} in ('done', 'failed', 'declined')`),
  ],
);

/**
 * A person's yes to a public app learning who they are (name, email), given on the consent page of /apps/signin. It
 * counts for the app while it has the owner it had then (`owner_id`); the name, address and owner's name are what
 * the page showed, kept for the dashboard's list (where Remove deletes the row).
 */
export const appConsents = gateway.table(
  "app_consents",
  {
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    appId: text("app_id").notNull(),
    ownerId: text("owner_id").notNull(),
    address: text("address").notNull(),
    appName: text("app_name").notNull(),
    ownerName: text("owner_name").notNull(),
    createdAt: created(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.appId] })],
);
