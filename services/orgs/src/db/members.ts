import { ToolError, type Role } from "@hatch/contracts";
import { and, count, eq, sql } from "drizzle-orm";
import { asRole, byRoleThenEmail, effectivePermissions } from "../roles.ts";
import type { PersonView, Tx } from "./accounts.ts";
import { accounts, members, people } from "./schema.ts";

export interface MemberView {
  userId: string;
  email: string;
  name: string;
  role: Role;
  /** Extras on top of the role. */
  extras: string[];
  joinedAt: Date;
}

/** The person acting in an organization: what every org tool but `org` and `org_setup` starts from. */
export interface OrgCaller extends PersonView {
  accountKind: "company";
}

/** The caller's organization, or a clear error when they act as a personal account. */
export function requireOrg(person: PersonView): OrgCaller {
  if (person.accountKind !== "company") {
    throw new ToolError(
      "forbidden",
      "You are not in an organization: this account is a personal one. org_setup creates an organization " +
        "(action create), turns this account into one (action convert), or joins one by invitation (action accept).",
    );
  }
  return person as OrgCaller;
}

const memberColumns = {
  userId: members.userId,
  email: people.email,
  name: people.name,
  role: members.role,
  extras: members.permissions,
  joinedAt: members.createdAt,
};

function toMember(row: {
  userId: string;
  email: string;
  name: string;
  role: string;
  extras: string[];
  joinedAt: Date;
}): MemberView {
  return { ...row, role: asRole(row.role) };
}

export async function listMembers(db: Tx, accountId: string): Promise<MemberView[]> {
  const rows = await db
    .select(memberColumns)
    .from(members)
    .innerJoin(people, eq(people.userId, members.userId))
    .where(eq(members.accountId, accountId));
  return rows.map(toMember).sort(byRoleThenEmail);
}

export async function findMemberByEmail(db: Tx, accountId: string, email: string): Promise<MemberView | null> {
  const [row] = await db
    .select(memberColumns)
    .from(members)
    .innerJoin(people, eq(people.userId, members.userId))
    .where(and(eq(members.accountId, accountId), eq(sql`lower(${people.email})`, email.toLowerCase())))
    .limit(1);
  return row ? toMember(row) : null;
}

/** Like findMemberByEmail, but a missing member is a not_found the AI can act on. */
export async function memberByEmail(
  db: Tx,
  org: { accountId: string; accountName: string },
  email: string,
): Promise<MemberView> {
  const member = await findMemberByEmail(db, org.accountId, email);
  if (!member)
    throw new ToolError("not_found", `${email} is not a member of ${org.accountName}. org_members lists the members.`);
  return member;
}

export async function orgSummary(db: Tx, accountId: string) {
  const [org] = await db.select().from(accounts).where(eq(accounts.id, accountId)).limit(1);
  if (!org) throw new Error(`account ${accountId} vanished`);
  const [owner] = await db
    .select({ email: people.email, name: people.name })
    .from(members)
    .innerJoin(people, eq(people.userId, members.userId))
    .where(and(eq(members.accountId, accountId), eq(members.role, "owner")))
    .limit(1);
  const [size] = await db.select({ n: count() }).from(members).where(eq(members.accountId, accountId));
  return {
    id: org.id,
    name: org.name,
    owner: owner ?? { email: "", name: "" },
    memberCount: size?.n ?? 0,
    createdAt: org.createdAt.toISOString(),
  };
}

/** A member as the contracts show one. */
export function memberOut(member: MemberView) {
  return {
    email: member.email,
    name: member.name,
    role: member.role,
    permissions: effectivePermissions(member.role, member.extras),
    joinedAt: member.joinedAt.toISOString(),
  };
}
