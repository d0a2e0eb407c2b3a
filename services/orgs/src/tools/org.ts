import { bindTool } from "@hatch/platform";
import { org } from "@hatch/contracts";
import type { OrgsContext } from "../context.ts";
import { callerPerson } from "../db/accounts.ts";
import { invitationsForEmail } from "../db/invitations.ts";
import { orgSummary } from "../db/members.ts";
import { asRole, capabilities, effectivePermissions } from "../roles.ts";

const NOTHING = capabilities("member", []);
const NONE = Object.fromEntries(Object.keys(NOTHING).map((k) => [k, false])) as typeof NOTHING;

export function orgTool(orgs: OrgsContext) {
  return bindTool(org, async ({ ctx }) => {
    const me = await callerPerson(orgs.db, ctx);
    // An unverified address proves nothing: invitations to it are listed once the user verified it.
    const waiting = ctx.emailVerified ? await invitationsForEmail(orgs.db, me.email) : [];
    const invitationsForMe = waiting.map(({ invitation, orgName }) => ({
      invitationId: invitation.id,
      org: { id: invitation.accountId, name: orgName },
      role: asRole(invitation.role) as "admin" | "manager" | "member",
      invitedBy: invitation.invitedByEmail,
      expiresAt: invitation.expiresAt.toISOString(),
    }));
    const invitesLine = !ctx.emailVerified
      ? ` Invitations sent to ${ctx.email} are listed once the user verifies that email (the link Hatch mailed them); an invitation link from a mail works at once.`
      : invitationsForMe.length
        ? ` Invitations waiting for you: ${invitationsForMe.map((i) => `${i.org.name} (invitationId ${i.invitationId})`).join(", ")}; org_setup action accept joins one.`
        : "";
    if (me.accountKind !== "company") {
      return {
        text: `You are not in an organization (this is a personal account). org_setup can create one or turn this account into one.${invitesLine}`,
        data: { org: null, role: null, permissions: [], can: NONE, invitationsForMe },
      };
    }
    const summary = await orgSummary(orgs.db, me.accountId);
    const permissions = effectivePermissions(me.role, me.permissions);
    const can = capabilities(me.role, permissions);
    const allowed = Object.entries(can)
      .filter(([, v]) => v)
      .map(([k]) => k);
    return {
      text:
        `You are ${me.role} of ${summary.name} (${summary.memberCount} member${summary.memberCount === 1 ? "" : "s"}, owner ${summary.owner.email}). ` +
        `Permissions: ${permissions.join(", ") || "none"}. You may: ${allowed.join(", ") || "manage your own apps"}.${invitesLine}`,
      data: { org: summary, role: me.role, permissions, can, invitationsForMe },
    };
  });
}
