import { randomId, type Database, type Session } from "@hatch/shared";
import { PERMISSIONS } from "@hatch/shared";
import { and, eq, sql } from "drizzle-orm";
import { accounts, members, people } from "./schema.ts";

export interface PersonView {
  userId: string;
  email: string;
  name: string;
  accountId: string;
  accountKind: "personal" | "company";
  accountName: string;
  role: string;
  permissions: string[];
}

function buildFindPerson(db: Database) {
  return db
    .select({
      userId: people.userId,
      email: people.email,
      name: people.name,
      accountId: accounts.id,
      accountKind: accounts.kind,
      accountName: accounts.name,
      role: members.role,
      permissions: members.permissions,
    })
    .from(people)
    .innerJoin(accounts, eq(accounts.id, people.activeAccountId))
    .innerJoin(members, and(eq(members.accountId, accounts.id), eq(members.userId, people.userId)))
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
  return rows[0] ?? null;
}

/**
 * Returns the person, creating their personal account on first contact. Safe under concurrency: the
 * insert of the person row decides which caller creates the account; the others read what it wrote.
 */
export async function ensurePerson(db: Database, user: { userId: string; email: string; name: string }): Promise<PersonView> {
  const existing = await findPerson(db, user.userId);
  if (existing) return existing;
  await db.transaction(async (tx) => {
    const inserted = await tx
      .insert(people)
      .values({ userId: user.userId, email: user.email, name: user.name })
      .onConflictDoNothing()
      .returning({ userId: people.userId });
    if (inserted.length === 0) return;
    const accountId = `acc_${randomId(12)}`;
    await tx.insert(accounts).values({ id: accountId, kind: "personal", name: user.name });
    await tx.insert(members).values({ accountId, userId: user.userId, role: "owner", permissions: [...PERMISSIONS] });
    await tx.update(people).set({ activeAccountId: accountId }).where(eq(people.userId, user.userId));
  });
  const created = await findPerson(db, user.userId);
  if (!created) throw new Error(`person ${user.userId} missing right after creation`);
  return created;
}

export function toSession(person: PersonView): Session {
  return {
    account: person.accountId,
    accountKind: person.accountKind,
    org: person.accountKind === "company" ? person.accountId : null,
    role: person.role as Session["role"],
    permissions: person.permissions as Session["permissions"],
  };
}
