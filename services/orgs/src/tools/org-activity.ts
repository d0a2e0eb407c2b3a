import { AppLookupSchema, isToolError, org_activity, rpcMethods, ToolError, type CallContext } from "@hatch/contracts";
import { bindTool, callRpc } from "@hatch/platform";
import { and, asc, eq } from "drizzle-orm";
import { contextFor, type OrgsContext } from "../context.ts";
import { callerPerson, onDashboard } from "../db/accounts.ts";
import { queryActivity } from "../db/activity.ts";
import { requireOrg, type OrgCaller } from "../db/members.ts";
import { activity } from "../db/schema.ts";
import { isManager } from "../roles.ts";

const ADDRESS = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;

export function orgActivityTool(orgs: OrgsContext) {
  return bindTool(org_activity, async ({ ctx, input, requestId }) => {
    const me = requireOrg(await callerPerson(orgs.db, ctx));
    if (!isManager(me.role)) {
      throw new ToolError(
        "forbidden",
        `Only the owner, admins and managers of ${me.accountName} read the activity log; you are a ${me.role}.`,
      );
    }
    if (input.from && input.to && input.from > input.to)
      throw new ToolError("invalid_input", `from (${input.from}) is after to (${input.to}); swap them.`);
    const app = input.app ? await appAddress(orgs, ctx, me, input.app, requestId) : undefined;
    const { rows, hasMore } = await queryActivity(orgs.db, me.accountId, { ...input, app });
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
      : `No activity matches.${await kindsLine(orgs, me.accountId)}`;
    return { text, data: { entries, hasMore } };
  });
}

/**
 * The address an app filter means: an address the log knows (a deleted app's too), else the app by its address, URL or
 * name as every other tool takes it (asked of apps, as the caller), else the address given (nothing matches it).
 */
async function appAddress(
  orgs: OrgsContext,
  ctx: CallContext,
  me: OrgCaller,
  ref: string,
  requestId: string,
): Promise<string> {
  const given = ref.trim();
  const host = /^https?:\/\//i.test(given) && URL.canParse(given) ? new URL(given).hostname.split(".")[0] : null;
  const candidate = (host ?? given).toLowerCase();
  if (ADDRESS.test(candidate)) {
    const [known] = await orgs.db
      .select({ app: activity.app })
      .from(activity)
      .where(and(eq(activity.accountId, me.accountId), eq(activity.app, candidate)))
      .limit(1);
    if (known) return candidate;
  }
  try {
    const found = await callRpc(orgs.bus, "apps", rpcMethods.apps.appLookup, { address: given }, AppLookupSchema, {
      ctx: contextFor(orgs, ctx, me),
      requestId,
    });
    return found.address;
  } catch (error) {
    if (!isToolError(error) || error.code !== "not_found") throw error;
    if (ADDRESS.test(candidate)) return candidate;
    throw new ToolError(
      "invalid_input",
      `No app of ${me.accountName} is named "${given}". Give its address or URL (org_apps lists them).`,
    );
  }
}

/** What an empty answer adds: the action kinds this organization's log holds, so the next filter can match. */
async function kindsLine(orgs: OrgsContext, accountId: string): Promise<string> {
  const kinds = await orgs.db
    .selectDistinct({ action: activity.action })
    .from(activity)
    .where(eq(activity.accountId, accountId))
    .orderBy(asc(activity.action));
  return kinds.length ? ` Action kinds in this log: ${kinds.map((k) => k.action).join(", ")}.` : " The log is empty.";
}

/** A dashboard call is said as "on the dashboard", an AI client by name. */
function where(client: { kind: string; name: string }): string {
  return onDashboard(client) ? "on the dashboard" : `via ${client.name}`;
}
