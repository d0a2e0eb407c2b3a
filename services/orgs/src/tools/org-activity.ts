import { bindTool, org_activity, ToolError } from "@hatch/shared";
import type { OrgsContext } from "../context.ts";
import { ensurePerson } from "../db/accounts.ts";
import { queryActivity } from "../db/activity.ts";
import { requireOrg } from "../db/members.ts";
import { isManager } from "../roles.ts";

export function orgActivityTool(orgs: OrgsContext) {
  return bindTool(org_activity, async ({ ctx, input }) => {
    const me = requireOrg(await ensurePerson(orgs.db, { userId: ctx.sub, email: ctx.email, name: ctx.name }));
    if (!isManager(me.role)) {
      throw new ToolError(
        "forbidden",
        `Only the owner, admins and managers of ${me.accountName} read the activity log; you are a ${me.role}.`,
      );
    }
    if (input.from && input.to && input.from > input.to)
      throw new ToolError("invalid_input", `from (${input.from}) is after to (${input.to}); swap them.`);
    const { rows, hasMore } = await queryActivity(orgs.db, me.accountId, input);
    const entries = rows.map((row) => ({
      date: row.time.toISOString(),
      person: row.actorEmail ? { email: row.actorEmail, name: row.actorName ?? "" } : null,
      app: row.app,
      action: row.action,
      summary: row.summary,
      client: row.clientKind ? { kind: row.clientKind, name: row.clientName ?? "" } : null,
    }));
    const lines = entries.map(
      (e) => `${e.date.slice(0, 16).replace("T", " ")} ${e.summary}${e.client ? ` (${where(e.client)})` : ""}`,
    );
    const text = entries.length
      ? `${entries.length} entr${entries.length === 1 ? "y" : "ies"}, newest first${hasMore ? " (older ones match too; narrow the filters)" : ""}:\n${lines.join("\n")}`
      : "No activity matches.";
    return { text, data: { entries, hasMore } };
  });
}

/** The gateway's dashboard calls tools as client {other, dashboard}: said as "on the dashboard", an AI client by name. */
function where(client: { kind: string; name: string }): string {
  return client.kind === "other" && client.name === "dashboard" ? "on the dashboard" : `via ${client.name}`;
}
