import { seatsUsed } from "../rpc/seats.ts";
import { bindTool, checkLimitLocked } from "@hatch/platform";
import {
  ORG_INVITE_MAX_PEOPLE,
  org_invite,
  ToolError,
  type CallContext,
  type Entitlements,
  type ToolInput,
  type ToolOutput,
  plural,
} from "@hatch/contracts";
import { and, eq, inArray, isNull, sql } from "drizzle-orm";
import { recordOrgEvent, type OrgsContext } from "../context.ts";
import { callerPerson, type Tx } from "../db/accounts.ts";
import { hashToken, invitationOut, newInvitationSecrets, type InvitationRow } from "../db/invitations.ts";
import { requireOrg, type OrgCaller } from "../db/members.ts";
import { invitations, members, people } from "../db/schema.ts";
import { invitationMail } from "../mail/invitation-mail.ts";
import { canAssign, extrasFor, isManager, permissionsBeyond } from "../roles.ts";

type Input = ToolInput<typeof org_invite>;
type Output = ToolOutput<typeof org_invite>;
type Skipped = Output["skipped"];

const day = (d: Date) => d.toISOString().slice(0, 10);

function checkMayInvite(me: OrgCaller, input: Input): void {
  if (!isManager(me.role)) {
    throw new ToolError(
      "forbidden",
      `Only the owner, admins and managers of ${me.accountName} invite people or revoke invitations; you are a ${me.role}. org_members shows who can.`,
    );
  }
  if (input.action === "invite" && !canAssign(me.role, input.role)) {
    throw new ToolError(
      "forbidden",
      `As ${me.role} you can invite people as ${me.role === "admin" ? "admin, manager or member" : "manager or member"}, not as ${input.role}. Nothing was sent.`,
    );
  }
  const beyond = permissionsBeyond({ role: me.role, extras: me.permissions }, input.permissions ?? []);
  if (input.action === "invite" && beyond.length > 0) {
    throw new ToolError(
      "forbidden",
      `You can only give permissions you hold yourself; you do not hold ${beyond.join(", ")}. Nothing was sent.`,
    );
  }
}

async function invite(
  orgs: OrgsContext,
  ctx: CallContext,
  me: OrgCaller,
  input: Input,
  emails: string[],
): Promise<Output> {
  const now = new Date();
  const expiresAt = new Date(now.getTime() + orgs.config.invitationTtlMs);
  const extras = extrasFor(input.role, input.permissions ?? []);
  const skipped: Skipped = [];
  const created: InvitationRow[] = [];
  // Asked before the transaction: billing may share the one embedded database connection the transaction holds.
  const entitlements = (await orgs.entitlements?.get(me.accountId)) ?? null;
  await orgs.db.transaction(async (tx) => {
    const already = await tx
      .select({ email: sql<string>`lower(${people.email})` })
      .from(members)
      .innerJoin(people, eq(people.userId, members.userId))
      .where(and(eq(members.accountId, me.accountId), inArray(sql`lower(${people.email})`, emails)));
    const memberEmails = new Set(already.map((r) => r.email));
    const openByEmail = await lockOpenInvitations(tx, me.accountId, emails);
    const adding = emails.filter((email) => {
      const open = openByEmail.get(email);
      return !memberEmails.has(email) && !(open && open.expiresAt > now);
    }).length;
    if (adding > 0) await checkSeats(entitlements, tx, me.accountId, adding, now);
    for (const email of emails) {
      const pending = openByEmail.get(email);
      if (memberEmails.has(email)) skipped.push({ email, reason: "already a member" });
      else if (pending && pending.expiresAt > now)
        skipped.push({ email, reason: `already invited; the invitation expires ${day(pending.expiresAt)}` });
      else {
        // An expired invitation gives way to the new one.
        if (pending) await tx.update(invitations).set({ revokedAt: now }).where(eq(invitations.id, pending.id));
        const { id, token } = newInvitationSecrets();
        const [row] = await tx
          .insert(invitations)
          .values({
            id,
            accountId: me.accountId,
            email,
            role: input.role,
            permissions: extras,
            invitedBy: me.userId,
            invitedByEmail: me.email,
            invitedByName: me.name,
            tokenHash: hashToken(token),
            createdAt: now,
            expiresAt,
          })
          .onConflictDoNothing()
          .returning();
        if (!row) {
          // Invited by someone else a moment ago (the open-invitation index held).
          skipped.push({ email, reason: "already invited" });
          continue;
        }
        created.push(row);
        const link = `${orgs.config.baseUrl}/invite/${token}`;
        await orgs.mailer.queue(tx, [
          invitationMail({
            to: email,
            orgName: me.accountName,
            role: input.role,
            inviter: me,
            link,
            expiresAt,
            message: input.message,
          }),
        ]);
        await recordOrgEvent(tx, ctx, me.accountId, {
          entity: "invitation",
          verb: "created",
          summary: `${me.name} <${me.email}> invited ${email} to ${me.accountName} as ${input.role}`,
          details: { invitation: id, email, role: input.role, permissions: extras },
        });
      }
    }
  });
  void orgs.mailer.kick();
  return { status: "invited", invited: created.map((row) => invitationOut(row, now)), revoked: [], skipped };
}

async function revoke(orgs: OrgsContext, ctx: CallContext, me: OrgCaller, emails: string[]): Promise<Output> {
  const skipped: Skipped = [];
  const revoked: string[] = [];
  await orgs.db.transaction(async (tx) => {
    const openByEmail = await lockOpenInvitations(tx, me.accountId, emails);
    for (const email of emails) {
      const row = openByEmail.get(email);
      if (!row) skipped.push({ email, reason: "no pending invitation" });
      else if (!canAssign(me.role, row.role as "admin" | "manager" | "member"))
        skipped.push({ email, reason: `invited as ${row.role}: only the owner or an admin can revoke it` });
      else {
        await tx.update(invitations).set({ revokedAt: new Date() }).where(eq(invitations.id, row.id));
        await recordOrgEvent(tx, ctx, me.accountId, {
          entity: "invitation",
          verb: "revoked",
          summary: `${me.name} <${me.email}> revoked the invitation of ${email} to ${me.accountName}`,
          details: { invitation: row.id, email },
        });
        revoked.push(email);
      }
    }
  });
  return { status: "revoked", invited: [], revoked, skipped };
}

function describe(orgs: OrgsContext, me: OrgCaller, out: Output): string {
  const skipped = out.skipped.length
    ? ` Skipped: ${out.skipped.map((s) => `${s.email} (${s.reason})`).join("; ")}.`
    : "";
  if (out.status === "revoked")
    return `Revoked ${plural(out.revoked.length, "invitation")} to ${me.accountName}${out.revoked.length ? `: ${out.revoked.join(", ")}` : ""}.${skipped}`;
  const where =
    orgs.mailer.mode === "smtp"
      ? "an email"
      : `an email (no mail server is configured here: under \`bun run dev\` each invitee reads it at ${orgs.config.baseUrl}/dev/outbox, signed in with that email)`;
  const first = out.invited[0];
  if (!first) return `Invited nobody to ${me.accountName}.${skipped}`;
  // One call invites everyone with the same role and permissions.
  const as = `as ${first.role}, may ${first.permissions.join(", ") || "nothing"}`;
  return `Invited ${plural(out.invited.length, "person")} to ${me.accountName} ${as}: ${out.invited.map((i) => i.email).join(", ")}; each gets ${where} with a link to join; the links work until ${day(new Date(first.expiresAt))}.${skipped}`;
}

export function orgInviteTool(orgs: OrgsContext) {
  return bindTool(org_invite, async ({ ctx, input }) => {
    const me = requireOrg(await callerPerson(orgs.db, ctx));
    checkMayInvite(me, input);
    const emails = [...new Set(input.emails.map((e) => e.toLowerCase()))];
    // The contract already refuses more; checked again here because nothing may be sent past the limit.
    if (emails.length > ORG_INVITE_MAX_PEOPLE)
      throw new ToolError(
        "limit_exceeded",
        `At most ${ORG_INVITE_MAX_PEOPLE} people per call; split the list. Nothing was sent.`,
      );
    const out =
      input.action === "revoke" ? await revoke(orgs, ctx, me, emails) : await invite(orgs, ctx, me, input, emails);
    return { text: describe(orgs, me, out), data: out };
  });
}

/**
 * Members and open invitations together may not pass the plan's seats (refused before anything is sent). Counted
 * under the account's lock, so invitations sent at once cannot pass the limit together.
 */
async function checkSeats(
  entitlements: Entitlements | null,
  tx: Tx,
  accountId: string,
  adding: number,
  now: Date,
): Promise<void> {
  await checkLimitLocked(tx, {
    entitlements,
    limit: "seats",
    accountId,
    adding,
    used: async () => {
      const used = await seatsUsed(tx, accountId, now);
      return used.members + used.invitations;
    },
  });
}

/** The account's open (not accepted, not revoked) invitations for these emails, locked for this transaction. */
async function lockOpenInvitations(tx: Tx, accountId: string, emails: string[]) {
  const open = await tx
    .select()
    .from(invitations)
    .where(
      and(
        eq(invitations.accountId, accountId),
        inArray(invitations.email, emails),
        isNull(invitations.acceptedAt),
        isNull(invitations.revokedAt),
      ),
    )
    .for("update");
  return new Map(open.map((row) => [row.email, row]));
}
