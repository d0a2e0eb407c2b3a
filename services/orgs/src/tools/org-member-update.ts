import { bindTool } from "@hatch/platform";
import { org_member_update, ToolError, type CallContext, type ToolInput, type ToolOutput } from "@hatch/contracts";
import { and, eq } from "drizzle-orm";
import { recordOrgEvent, type OrgsContext } from "../context.ts";
import { callerPerson } from "../db/accounts.ts";
import { memberByEmail, memberOut, requireOrg, type MemberView, type OrgCaller } from "../db/members.ts";
import { members } from "../db/schema.ts";
import { removeMember } from "../removal.ts";
import { canAssign, canManage, extrasFor, isManager, permissionsBeyond } from "../roles.ts";

type Input = ToolInput<typeof org_member_update>;
type Output = ToolOutput<typeof org_member_update>;

const noApps = { appsToMove: [], appsRecipient: null };

function requireManager(me: OrgCaller): void {
  if (!isManager(me.role)) {
    throw new ToolError(
      "forbidden",
      `Only the owner, admins and managers of ${me.accountName} change or remove members; you are a ${me.role}. Nothing was changed.`,
    );
  }
}

async function update(
  orgs: OrgsContext,
  ctx: CallContext,
  me: OrgCaller,
  target: MemberView,
  input: Input,
): Promise<{ text: string; data: Output }> {
  if (!input.role && !input.permissions)
    throw new ToolError("invalid_input", "Give role and/or permissions for action update. Nothing was changed.");
  if (target.role === "owner")
    throw new ToolError(
      "forbidden",
      `${target.email} is the owner; the owner's role changes only by transfer_ownership (done by the owner).`,
    );
  if (!canManage(me.role, target.role))
    throw new ToolError(
      "forbidden",
      `As ${me.role} you cannot change ${target.email}, who is ${target.role}. Ask the owner or an admin.`,
    );
  const role = input.role ?? (target.role as Exclude<MemberView["role"], "owner">);
  if (!canAssign(me.role, role))
    throw new ToolError("forbidden", `As ${me.role} you cannot make anyone ${role}. Nothing was changed.`);
  const wanted = input.permissions ?? target.extras;
  const beyond = permissionsBeyond({ role: me.role, extras: me.permissions }, input.permissions ?? []);
  if (beyond.length)
    throw new ToolError(
      "forbidden",
      `You can only give permissions you hold yourself; you do not hold ${beyond.join(", ")}. Nothing was changed.`,
    );
  const extras = extrasFor(role, wanted);
  const after: MemberView = { ...target, role, extras };
  await orgs.db.transaction(async (tx) => {
    const changed = await tx
      .update(members)
      .set({ role, permissions: extras })
      .where(and(eq(members.accountId, me.accountId), eq(members.userId, target.userId)))
      .returning({ userId: members.userId });
    if (changed.length === 0)
      throw new ToolError("not_found", `${target.email} is no longer a member of ${me.accountName}.`);
    const shown = memberOut(after);
    await recordOrgEvent(tx, ctx, me.accountId, {
      entity: "member",
      verb: "updated",
      summary: `${me.name} <${me.email}> made ${target.email} ${role} with permissions ${shown.permissions.join(", ") || "none"}`,
      details: {
        member: { userId: target.userId, email: target.email },
        from: { role: target.role, extras: target.extras },
        to: { role, extras },
      },
      affectedUsers: [target.userId],
    });
  });
  const out = memberOut(after);
  return {
    text: `${target.email} is now ${role} of ${me.accountName} with permissions: ${out.permissions.join(", ") || "none"}. It applies from their next call.`,
    data: { status: "updated", member: out, ...noApps },
  };
}

/** The owner hands ownership to a member and becomes an admin: there is always exactly one owner. */
async function transfer(
  orgs: OrgsContext,
  ctx: CallContext,
  me: OrgCaller,
  target: MemberView,
): Promise<{ text: string; data: Output }> {
  if (me.role !== "owner")
    throw new ToolError(
      "forbidden",
      `Only the owner of ${me.accountName} can transfer ownership. Nothing was changed.`,
    );
  if (target.userId === me.userId)
    throw new ToolError(
      "invalid_input",
      "You already are the owner. Give the email of the member who should become the owner.",
    );
  await orgs.db.transaction(async (tx) => {
    const demoted = await tx
      .update(members)
      .set({ role: "admin" })
      .where(and(eq(members.accountId, me.accountId), eq(members.userId, me.userId), eq(members.role, "owner")))
      .returning({ userId: members.userId });
    if (demoted.length === 0) throw new ToolError("conflict", "You are no longer the owner, so nothing was changed.");
    const promoted = await tx
      .update(members)
      .set({ role: "owner", permissions: [] })
      .where(and(eq(members.accountId, me.accountId), eq(members.userId, target.userId)))
      .returning({ userId: members.userId });
    if (promoted.length === 0)
      throw new ToolError("not_found", `${target.email} is no longer a member of ${me.accountName}.`);
    await recordOrgEvent(tx, ctx, me.accountId, {
      entity: "org",
      verb: "ownership_transferred",
      summary: `${me.name} <${me.email}> made ${target.email} the owner of ${me.accountName} (and became an admin)`,
      details: { from: { userId: me.userId, email: me.email }, to: { userId: target.userId, email: target.email } },
      affectedUsers: [me.userId, target.userId],
    });
  });
  const member = memberOut({ ...target, role: "owner", extras: [] });
  return {
    text: `${target.email} is now the owner of ${me.accountName}; you are an admin.`,
    data: { status: "transferred", member, ...noApps },
  };
}

export function orgMemberUpdateTool(orgs: OrgsContext) {
  return bindTool(org_member_update, async (call) => {
    const { ctx, input } = call;
    const me = requireOrg(await callerPerson(orgs.db, ctx));
    if (input.action !== "transfer_ownership") requireManager(me);
    const target = await memberByEmail(orgs.db, me, input.email);
    if (input.action === "transfer_ownership") return transfer(orgs, ctx, me, target);
    if (input.action === "update") return update(orgs, ctx, me, target, input);
    return removeMember(orgs, call, me, target);
  });
}
