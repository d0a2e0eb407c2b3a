import { ToolError, type CallContext, type Role } from "@hatch/contracts";
import { eq } from "drizzle-orm";
import type { OrgsContext } from "./context.ts";
import { recordOrgEvent } from "./context.ts";
import { ensurePerson, findPersonIn } from "./db/accounts.ts";
import { hashToken, invitationStatus } from "./db/invitations.ts";
import { accounts, invitations, members, people } from "./db/schema.ts";
import { asRole, effectivePermissions } from "./roles.ts";

/** How the invitation is named: by its id (org_setup, for the invited email only) or by its link's token. */
export type InvitationKey = { id: string } | { token: string };

export interface Joined {
  org: { id: string; name: string };
  role: Role;
  permissions: ReturnType<typeof effectivePermissions>;
  /** The address the invitation went to (lower-cased). */
  invitedEmail: string;
}

const NOT_FOUND =
  "There is no pending invitation like that for you. org lists the invitations waiting for your email; " +
  "ask the organization to invite you (again) if it is not there.";

/** What an unverified caller is told when something needs their email to be theirs. */
export function unverified(email: string): ToolError {
  return new ToolError(
    "forbidden",
    `Verify your email first: open the link Hatch mailed to ${email} (the home page can send it again), ` +
      "or accept through the invitation link you were mailed. Nothing was changed.",
  );
}

/**
 * The caller joins the organization of an invitation. By id, only the invited email may accept, and only once
 * the caller verified it (the tool has nothing else to go on: anyone can sign up with any address); by token,
 * whoever holds the link does (it went to that inbox).
 */
export async function acceptInvitation(orgs: OrgsContext, ctx: CallContext, key: InvitationKey): Promise<Joined> {
  if ("id" in key && !ctx.emailVerified) throw unverified(ctx.email);
  const person = await ensurePerson(orgs.db, { userId: ctx.sub, email: ctx.email, name: ctx.name });
  return orgs.db.transaction(async (tx) => {
    const where = "id" in key ? eq(invitations.id, key.id) : eq(invitations.tokenHash, hashToken(key.token));
    const [invitation] = await tx.select().from(invitations).where(where).limit(1).for("update");
    if (!invitation || ("id" in key && invitation.email !== person.email.toLowerCase()))
      throw new ToolError("not_found", NOT_FOUND);
    const [org] = await tx.select().from(accounts).where(eq(accounts.id, invitation.accountId)).limit(1);
    if (!org) throw new ToolError("not_found", NOT_FOUND);
    const status = invitationStatus(invitation);
    if (status === "accepted" && invitation.acceptedBy === person.userId) {
      throw new ToolError("conflict", `You already accepted this invitation: you are in ${org.name}.`);
    }
    if (status !== "pending") {
      const why =
        status === "expired"
          ? `expired on ${invitation.expiresAt.toISOString().slice(0, 10)}`
          : status === "revoked"
            ? "was revoked"
            : "was already used";
      throw new ToolError(
        "conflict",
        `This invitation to ${org.name} ${why}. Ask ${invitation.invitedByEmail} to invite you again.`,
      );
    }
    const current = await findPersonIn(tx, person.userId);
    if (current?.accountKind === "company") {
      throw new ToolError(
        "conflict",
        current.accountId === org.id
          ? `You are already a member of ${org.name}.`
          : `You already act in the organization ${current.accountName}; a person belongs to one organization at a time. ` +
              `To join ${org.name}, someone who manages ${current.accountName} must remove you first. Nothing was changed.`,
      );
    }
    const role = asRole(invitation.role);
    await tx
      .insert(members)
      .values({ accountId: org.id, userId: person.userId, role, permissions: invitation.permissions });
    await tx.update(people).set({ activeAccountId: org.id }).where(eq(people.userId, person.userId));
    await tx
      .update(invitations)
      .set({ acceptedAt: new Date(), acceptedBy: person.userId })
      .where(eq(invitations.id, invitation.id));
    await recordOrgEvent(tx, ctx, org.id, {
      entity: "member",
      verb: "joined",
      summary: `${person.name} <${person.email}> joined ${org.name} as ${role} (invited by ${invitation.invitedByEmail})`,
      details: { member: { userId: person.userId, email: person.email }, role, invitation: invitation.id },
      affectedUsers: [person.userId],
    });
    return {
      org: { id: org.id, name: org.name },
      role,
      permissions: effectivePermissions(role, invitation.permissions),
      invitedEmail: invitation.email,
    };
  });
}
