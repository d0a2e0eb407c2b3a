import { bindTool, org_members } from "@hatch/shared";
import type { OrgsContext } from "../context.ts";
import { ensurePerson } from "../db/accounts.ts";
import { invitationOut, openInvitations } from "../db/invitations.ts";
import { listMembers, memberOut, requireOrg } from "../db/members.ts";
import { isManager } from "../roles.ts";

export function orgMembersTool(orgs: OrgsContext) {
  return bindTool(org_members, async ({ ctx, input }) => {
    const me = requireOrg(await ensurePerson(orgs.db, { userId: ctx.sub, email: ctx.email, name: ctx.name }));
    const members = input.include === "invitations" ? [] : (await listMembers(orgs.db, me.accountId)).map(memberOut);
    // Pending invitations are the managers' business (they send and revoke them).
    const seesInvitations = isManager(me.role) && input.include !== "members";
    const now = new Date();
    const invitations = seesInvitations
      ? (await openInvitations(orgs.db, me.accountId)).map((row) => invitationOut(row, now))
      : [];
    const parts: string[] = [];
    if (input.include !== "invitations")
      parts.push(
        `${members.length} member(s) of ${me.accountName}: ${members.map((m) => `${m.email} (${m.role})`).join(", ")}.`,
      );
    if (input.include !== "members") {
      parts.push(
        seesInvitations
          ? `${invitations.length} open invitation(s)${invitations.length ? `: ${invitations.map((i) => `${i.email} (${i.role}, ${i.status})`).join(", ")}` : ""}.`
          : "Only the owner, admins and managers see pending invitations.",
      );
    }
    return { text: parts.join(" "), data: { members, invitations } };
  });
}
