import type { ToolBinding } from "@hatch/platform";
import type { OrgsContext } from "../context.ts";
import { orgActivityTool } from "./org-activity.ts";
import { orgInviteTool } from "./org-invite.ts";
import { orgMemberUpdateTool } from "./org-member-update.ts";
import { orgMembersTool } from "./org-members.ts";
import { orgSetupTool } from "./org-setup.ts";
import { orgTool } from "./org.ts";
import { whoamiTool } from "./whoami.ts";

/** Every tool the orgs service handles. */
export function orgsTools(orgs: OrgsContext): ToolBinding[] {
  return [
    whoamiTool(orgs.db),
    orgTool(orgs),
    orgSetupTool(orgs),
    orgInviteTool(orgs),
    orgMembersTool(orgs),
    orgMemberUpdateTool(orgs),
    orgActivityTool(orgs),
  ];
}
