import { confirmUsesTable, outboxTable } from "@hatch/platform";
import { type HatchEvent } from "@hatch/contracts";
import { sql } from "drizzle-orm";
import { index, integer, jsonb, pgSchema, primaryKey, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";

/** The orgs service's own schema: accounts (personal or company), who belongs to them, and in what role. */
export const orgs = pgSchema("orgs");

const created = () => timestamp("created_at", { withTimezone: true }).notNull().defaultNow();
const when = (name: string) => timestamp(name, { withTimezone: true });

/** A personal account (one person) or a company (an organization). Apps belong to accounts. */
export const accounts = orgs.table("accounts", {
  id: text("id").primaryKey(),
  kind: text("kind").$type<"personal" | "company">().notNull(),
  name: text("name").notNull(),
  createdAt: created(),
});

/** A person as orgs knows them (mirrored from the gateway on first contact) and the account they act as. */
export const people = orgs.table(
  "people",
  {
    userId: text("user_id").primaryKey(),
    email: text("email").notNull(),
    name: text("name").notNull(),
    activeAccountId: text("active_account_id").references(() => accounts.id),
    createdAt: created(),
  },
  (t) => [uniqueIndex("people_email_lower").on(sql`lower(${t.email})`)],
);

/** Who belongs to an account. `permissions` holds the extras on top of the role (see src/roles.ts). */
export const members = orgs.table(
  "members",
  {
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    userId: text("user_id")
      .notNull()
      .references(() => people.userId, { onDelete: "cascade" }),
    role: text("role").notNull(),
    permissions: jsonb("permissions").$type<string[]>().notNull(),
    createdAt: created(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.userId] }), index("members_user").on(t.userId)],
);

/**
 * An invitation to join an organization. Open while neither accepted nor revoked (at most one open per email
 * and organization); past `expires_at` it can no longer be accepted. The link carries a token; only its
 * sha256 is kept.
 */
export const invitations = orgs.table(
  "invitations",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    /** Lower-cased. */
    email: text("email").notNull(),
    role: text("role").notNull(),
    permissions: jsonb("permissions").$type<string[]>().notNull(),
    invitedBy: text("invited_by").notNull(),
    invitedByEmail: text("invited_by_email").notNull(),
    invitedByName: text("invited_by_name").notNull(),
    tokenHash: text("token_hash").notNull().unique(),
    createdAt: created(),
    expiresAt: when("expires_at").notNull(),
    acceptedAt: when("accepted_at"),
    acceptedBy: text("accepted_by"),
    revokedAt: when("revoked_at"),
  },
  (t) => [
    uniqueIndex("invitations_open")
      .on(t.accountId, t.email)
      .where(sql`${t.acceptedAt} is null and ${t.revokedAt} is null`),
    index("invitations_email").on(t.email),
  ],
);

/**
 * Mails to send, written in the same transaction as what they announce. `pending` ones go out by SMTP
 * (the body is dropped once sent: it holds a live link); `outbox` ones are kept for the dev outbox page when
 * no SMTP server is configured.
 */
export const mails = orgs.table(
  "mails",
  {
    id: text("id").primaryKey(),
    to: text("to").notNull(),
    subject: text("subject").notNull(),
    body: text("body"),
    status: text("status").$type<"pending" | "sent" | "failed" | "outbox">().notNull(),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: when("next_attempt_at").notNull().defaultNow(),
    lockedUntil: when("locked_until"),
    lastError: text("last_error"),
    createdAt: created(),
    sentAt: when("sent_at"),
  },
  (t) => [
    index("mails_due").on(t.nextAttemptAt).where(sql`${t.status} = 'pending'`),
    index("mails_created").on(t.createdAt),
  ],
);

/** The activity log: one row per event (from every service) about an account, applied once by event id. */
export const activity = orgs.table(
  "activity",
  {
    eventId: text("event_id").primaryKey(),
    accountId: text("account_id").notNull(),
    time: when("time").notNull(),
    service: text("service").notNull(),
    /** `<entity>.<verb>`, e.g. app.paused, member.removed. */
    action: text("action").notNull(),
    app: text("app"),
    actorUserId: text("actor_user_id"),
    /** Lower-cased. */
    actorEmail: text("actor_email"),
    actorName: text("actor_name"),
    clientKind: text("client_kind"),
    clientName: text("client_name"),
    grantId: text("grant_id"),
    summary: text("summary").notNull(),
    event: jsonb("event").$type<HatchEvent>().notNull(),
    recordedAt: created(),
  },
  (t) => [index("activity_account_time").on(t.accountId, t.time)],
);

export const outbox = outboxTable(orgs);
export const confirmUses = confirmUsesTable(orgs);
