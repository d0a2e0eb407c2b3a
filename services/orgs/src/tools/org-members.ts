import { bindTool } from "@hatch/platform";
import { org_members, plural } from "@hatch/contracts";
import type { OrgsContext } from "../context.ts";
import { callerPerson } from "../db/accounts.ts";
import { invitationOut, openInvitations } from "../db/invitations.ts";
import { listMembers, memberOut, requireOrg } from "../db/members.ts";
import { isManager } from "../roles.ts";

export function orgMembersTool(orgs: OrgsContext) {
  return bindTool(org_members, async ({ ctx, input }) => {
    const me = requireOrg(await callerPerson(orgs.db, ctx));
    const members = input.include === "invitations" ? [] : (await listMembers(orgs.db, me.accountId)).map(memberOut);
    // Pending invitations are the managers' business (they send and revoke them).
    const seesInvitations = isManager(me.role) && input.include !== "members";
    const now = new Date();
    const invitations = seesInvitations
      ? (await openInvitations(orgs.db, me.accountId)).map((row) => invitationOut(row, now))
      : [];
    const day = (iso: string) => iso.slice(0, 10);
    const can = (permissions: readonly string[]) => (permissions.length ? permissions.join(", ") : "nothing");
    const parts: string[] = [];
    if (input.include !== "invitations")
      parts.push(
        `${plural(members.length, "member")} of ${me.accountName}:`,
        ...members.map(
          (m) => `- ${m.name} <${m.email}>: ${m.role} since ${day(m.joinedAt)}; may ${can(m.permissions)}`,
        ),
      );
    if (input.include !== "members") {
      parts.push(
        seesInvitations
          ? `${plural(invitations.length, "open invitation")}${invitations.length ? ":" : "."}`
          : "Only the owner, admins and managers see pending invitations.",
        ...invitations.map(
          (i) =>
            `- ${i.email}: ${i.role}, may ${can(i.permissions)}; invited by ${i.invitedBy} on ${day(i.invitedAt)}, ` +
            `${i.status === "expired" ? "expired" : "expires"} ${day(i.expiresAt)}`,
        ),
      );
    }
    return { text: parts.join("\n"), data: { members, invitations } };
  });
}
