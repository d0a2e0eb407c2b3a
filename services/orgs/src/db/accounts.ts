import { randomId, type CallContext, type Role, type Session } from "@hatch/contracts";
import { type Database } from "@hatch/platform";
import { and, eq, ne, notExists, sql } from "drizzle-orm";
import { asRole, effectivePermissions } from "../roles.ts";
import { accounts, members, people } from "./schema.ts";

export interface PersonView {
  userId: string;
  email: string;
  name: string;
  accountId: string;
  accountKind: "personal" | "company";
  accountName: string;
  role: Role;
  /** The extras on top of the role (effectivePermissions gives the whole set). */
  permissions: string[];
}

/** A transaction or the database itself. */
export type Tx = Pick<Database, "select" | "insert" | "update" | "delete" | "execute">;

/** A person in an account: who they are, the account, and their role and extra permissions there. */
const personColumns = {
  userId: people.userId,
  email: people.email,
  name: people.name,
  accountId: accounts.id,
  accountKind: accounts.kind,
  accountName: accounts.name,
  role: members.role,
  permissions: members.permissions,
};

function selectPerson(db: Tx) {
  return db
    .select(personColumns)
    .from(people)
    .innerJoin(accounts, eq(accounts.id, people.activeAccountId))
    .innerJoin(members, and(eq(members.accountId, accounts.id), eq(members.userId, people.userId)));
}

function buildFindPerson(db: Database) {
  return selectPerson(db)
    .where(eq(people.userId, sql.placeholder("userId")))
    .limit(1)
    .prepare("orgs_find_person");
}

// This lookup runs on every tool call: a named prepared statement skips query building here and
// parsing and planning in Postgres. One per database handle.
const findPersonQueries = new WeakMap<Database, ReturnType<typeof buildFindPerson>>();

/** The person and the account they act as, or null if orgs has never seen them. */
export async function findPerson(db: Database, userId: string): Promise<PersonView | null> {
  let query = findPersonQueries.get(db);
  if (!query) {
    query = buildFindPerson(db);
    findPersonQueries.set(db, query);
  }
  const rows = await query.execute({ userId });
  const row = rows[0];
  return row ? { ...row, role: asRole(row.role) } : null;
}

/**
 * Returns the person, creating their personal account on first contact. Safe under concurrency: the
 * insert of the person row decides which caller creates the account; the others read what it wrote.
 */
export async function ensurePerson(
  db: Database,
  user: { userId: string; email: string; name: string },
): Promise<PersonView> {
  const existing = await findPerson(db, user.userId);
  // The gateway's signed ctx carries the person's name and email as they are now (changed on the settings page).
  // Another person's row may still hold the address (they changed theirs and have not called since): then only the
  // name follows now, and the email at a later call.
  if (existing && (existing.email !== user.email || existing.name !== user.name)) {
    const changed = await db
      .update(people)
      .set({ email: user.email, name: user.name })
      .where(
        and(
          eq(people.userId, user.userId),
          notExists(
            db
              .select({ userId: people.userId })
              .from(people)
              .where(and(eq(sql`lower(${people.email})`, user.email.toLowerCase()), ne(people.userId, user.userId))),
          ),
        ),
      )
      .returning({ userId: people.userId });
    if (changed.length) return { ...existing, email: user.email, name: user.name };
    await db.update(people).set({ name: user.name }).where(eq(people.userId, user.userId));
    return { ...existing, name: user.name };
  }
  if (existing) return existing;
  await db.transaction(async (tx) => {
    const inserted = await tx
      .insert(people)
      .values({ userId: user.userId, email: user.email, name: user.name })
      .onConflictDoNothing()
      .returning({ userId: people.userId });
    if (inserted.length === 0) return;
    await createPersonalAccount(tx, user);
  });
  const created = await findPerson(db, user.userId);
  if (!created) throw new Error(`person ${user.userId} missing right after creation`);
  return created;
}

/** The gateway's dashboard calls tools as client {other, dashboard} (its calls.ts DASHBOARD_CLIENT). */
export function onDashboard(client: { kind: string; name: string }): boolean {
  return client.kind === "other" && client.name === "dashboard";
}

/**
 * The person in the account an organization tool acts in, with their role and permissions there. On the dashboard it
 * is the account its switcher shows (`ctx.account`, which `session.resolve` answered only for an account of theirs),
 * read again here from `members`: a membership that ended since counts for nothing (then the account they act as).
 * An AI's call acts in the account orgs keeps as active, read here rather than from its ctx, which the gateway may
 * have resolved before a change made a moment ago (a join, a new organization).
 */
export async function callerPerson(db: Database, ctx: CallContext): Promise<PersonView> {
  const me = await ensurePerson(db, { userId: ctx.sub, email: ctx.email, name: ctx.name });
  if (!ctx.account || ctx.account === me.accountId || !onDashboard(ctx.client)) return me;
  return (await memberIn(db, ctx.sub, ctx.account)) ?? me;
}

/**
 * The same lookup inside a transaction, with the person's row locked until it ends: two changes to whom one
 * person belongs (create, convert, accept, removal) never interleave.
 */
export async function findPersonIn(tx: Tx, userId: string): Promise<PersonView | null> {
  await tx.select({ userId: people.userId }).from(people).where(eq(people.userId, userId)).for("update");
  const [row] = await selectPerson(tx).where(eq(people.userId, userId)).limit(1);
  return row ? { ...row, role: asRole(row.role) } : null;
}

/** The person as a member of `accountId` (any account they belong to, not only the one they act as), or null. */
export async function memberIn(db: Tx, userId: string, accountId: string): Promise<PersonView | null> {
  const [row] = await db
    .select(personColumns)
    .from(members)
    .innerJoin(accounts, eq(accounts.id, members.accountId))
    .innerJoin(people, eq(people.userId, members.userId))
    .where(and(eq(members.userId, userId), eq(members.accountId, accountId)))
    .limit(1);
  return row ? { ...row, role: asRole(row.role) } : null;
}

/** Every account the person belongs to, with their role in it. */
export async function accountsOf(db: Tx, userId: string) {
  const rows = await db
    .select({ id: accounts.id, kind: accounts.kind, name: accounts.name, role: members.role })
    .from(members)
    .innerJoin(accounts, eq(accounts.id, members.accountId))
    .where(eq(members.userId, userId));
  return rows.map((r) => ({ ...r, role: asRole(r.role) }));
}

export function toSession(person: PersonView): Session {
  return {
    account: person.accountId,
    accountKind: person.accountKind,
    org: person.accountKind === "company" ? person.accountId : null,
    orgName: person.accountKind === "company" ? person.accountName : null,
    role: person.role,
    permissions: effectivePermissions(person.role, person.permissions),
  };
}

export function newAccountId(): string {
  return `acc_${randomId(12)}`;
}

/** A new personal account owned by the person, made the one they act as. */
async function createPersonalAccount(tx: Tx, user: { userId: string; name: string }): Promise<string> {
  const accountId = newAccountId();
  await tx.insert(accounts).values({ id: accountId, kind: "personal", name: user.name });
  await tx.insert(members).values({ accountId, userId: user.userId, role: "owner", permissions: [] });
  await tx.update(people).set({ activeAccountId: accountId }).where(eq(people.userId, user.userId));
  return accountId;
}

/**
 * Makes the person act as their personal account again (after leaving an organization), creating one when
 * they have none left (theirs became a company).
 */
export async function returnToPersonalAccount(tx: Tx, user: { userId: string; name: string }): Promise<string> {
  const [own] = await tx
    .select({ id: accounts.id })
    .from(members)
    .innerJoin(accounts, eq(accounts.id, members.accountId))
    .where(and(eq(members.userId, user.userId), eq(accounts.kind, "personal"), eq(members.role, "owner")))
    .limit(1);
  if (!own) return createPersonalAccount(tx, user);
  await tx.update(people).set({ activeAccountId: own.id }).where(eq(people.userId, user.userId));
  return own.id;
}
