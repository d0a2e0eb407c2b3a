import { sql } from "drizzle-orm";
import { jsonb, pgSchema, primaryKey, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";

/** The orgs service's own schema: accounts (personal or company), who belongs to them, and in what role. */
export const orgs = pgSchema("orgs");

const created = () => timestamp("created_at", { withTimezone: true }).notNull().defaultNow();

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

export const members = orgs.table(
  "members",
  {
    accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
    userId: text("user_id").notNull().references(() => people.userId, { onDelete: "cascade" }),
    role: text("role").notNull(),
    permissions: jsonb("permissions").$type<string[]>().notNull(),
    createdAt: created(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.userId] })],
);
