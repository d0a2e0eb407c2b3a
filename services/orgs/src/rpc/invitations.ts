import { bindRpc } from "@hatch/platform";
import {
  InvitationTokenInputSchema,
  ToolError,
  type InvitationAccepted,
  type InvitationPreview,
} from "@hatch/contracts";
import { eq } from "drizzle-orm";
import { acceptInvitation } from "../accept.ts";
import type { OrgsContext } from "../context.ts";
import { hashToken, invitationStatus } from "../db/invitations.ts";
import { accounts, invitations } from "../db/schema.ts";
import { asRole } from "../roles.ts";

const NO_SUCH = "This invitation link is not valid. Ask for a new invitation.";

/** What an invitation link is for; the token is the credential, so no user context is needed to look. */
export function previewInvitationRpc(orgs: OrgsContext) {
  return bindRpc(
    InvitationTokenInputSchema,
    async ({ input }): Promise<InvitationPreview> => {
      const [row] = await orgs.db
        .select({ invitation: invitations, orgName: accounts.name })
        .from(invitations)
        .innerJoin(accounts, eq(accounts.id, invitations.accountId))
        .where(eq(invitations.tokenHash, hashToken(input.token)))
        .limit(1);
      if (!row) throw new ToolError("not_found", NO_SUCH);
      const { invitation } = row;
      return {
        status: invitationStatus(invitation),
        orgName: row.orgName,
        email: invitation.email,
        role: asRole(invitation.role),
        invitedBy: { name: invitation.invitedByName, email: invitation.invitedByEmail },
        expiresAt: invitation.expiresAt.toISOString(),
      };
    },
    { requiresContext: false },
  );
}

/** The signed-in user (the gateway signs their context) accepts by the link's token. */
export function acceptInvitationRpc(orgs: OrgsContext) {
  return bindRpc(
    InvitationTokenInputSchema,
    async ({ ctx, input }): Promise<InvitationAccepted> => {
      if (!ctx) throw new ToolError("forbidden", "A signed call context is required.");
      const joined = await acceptInvitation(orgs, ctx, { token: input.token });
      return { orgId: joined.org.id, orgName: joined.org.name, role: joined.role, email: joined.invitedEmail };
    },
    { writes: true },
  );
}
