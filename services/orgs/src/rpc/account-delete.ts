import { callRpc, bindRpc } from "@hatch/platform";
import {
  AccountDeletionInputSchema,
  OwnedAppsSchema,
  plural,
  rpcMethods,
  ToolError,
  type AccountDeletionPlan,
  type CallContext,
} from "@hatch/contracts";
import { and, eq, inArray } from "drizzle-orm";
import { contextFor, recordOrgEvent, type OrgsContext } from "../context.ts";
import { findPerson } from "../db/accounts.ts";
import { listMembers } from "../db/members.ts";
import { accounts, members, people } from "../db/schema.ts";

// A person deleting their Hatch account (the gateway's settings page asks). Refused while they own an organization
// others belong to (ownership moves first) or an account of theirs pays for a plan (cancel first). Otherwise their apps
// in each organization move to its owner (apps `owned.move`, as removing a member does), each membership ends with a
// `member.left` event in that organization's log, then the person and the accounts only they belonged to go. Only the
// person themselves asks (the signed ctx's user); a retry after a partial failure finishes the job.

function requireSelf(ctx: CallContext | null, userId: string): CallContext {
  if (!ctx || ctx.sub !== userId)
    throw new ToolError("forbidden", "Only the person themselves can delete their account.");
  return ctx;
}

async function planFor(orgs: OrgsContext, userId: string): Promise<AccountDeletionPlan> {
  const rows = await orgs.db
    .select({ id: accounts.id, kind: accounts.kind, name: accounts.name, role: members.role })
    .from(members)
    .innerJoin(accounts, eq(accounts.id, members.accountId))
    .where(eq(members.userId, userId))
    .orderBy(accounts.name);
  const plan: AccountDeletionPlan = { refusal: null, soloAccounts: [], memberships: [] };
  const refusals: string[] = [];
  const base = orgs.config.baseUrl;
  for (const row of rows) {
    const all = await listMembers(orgs.db, row.id);
    const others = all.filter((m) => m.userId !== userId);
    const me = all.find((m) => m.userId === userId);
    if (others.length === 0) {
      plan.soloAccounts.push({ id: row.id, name: row.name, kind: row.kind });
      const paid = await orgs.entitlements?.get(row.id);
      if (paid && paid.plan !== "free" && paid.state !== "canceled")
        refusals.push(
          `${row.kind === "personal" ? "Your account" : row.name} is on the paid ${paid.plan} plan. Cancel it first on ${base}/dashboard/billing.`,
        );
    } else if (me?.role === "owner") {
      refusals.push(
        `You own ${row.name}, which has ${plural(others.length, "other member")}. Transfer its ownership first on ${base}/dashboard/settings.`,
      );
    } else {
      const owner = others.find((m) => m.role === "owner");
      plan.memberships.push({
        accountId: row.id,
        name: row.name,
        role: me?.role ?? "member",
        ownerEmail: owner?.email ?? "",
      });
    }
  }
  plan.refusal = refusals.length ? `${refusals.join(" ")} Nothing was changed.` : null;
  return plan;
}

/** `account.deletion`: what deleting the caller's own account would do, or why not now. */
export function accountDeletionRpc(orgs: OrgsContext) {
  return bindRpc(AccountDeletionInputSchema, async ({ ctx, input }) => {
    requireSelf(ctx, input.userId);
    return planFor(orgs, input.userId);
  });
}

/** `account.delete`: the orgs part of deleting the caller's own account (the gateway deleted the apps before). */
export function accountDeleteRpc(orgs: OrgsContext) {
  return bindRpc(
    AccountDeletionInputSchema,
    async ({ ctx, input, requestId }) => {
      const caller = requireSelf(ctx, input.userId);
      const plan = await planFor(orgs, input.userId);
      if (plan.refusal) throw new ToolError("conflict", plan.refusal);
      const person = await findPerson(orgs.db, input.userId);
      const left: { name: string; ownerEmail: string; apps: { address: string; name: string }[] }[] = [];
      for (const m of plan.memberships) {
        const all = await listMembers(orgs.db, m.accountId);
        const me = all.find((x) => x.userId === input.userId);
        const owner = all.find((x) => x.role === "owner");
        if (!me || !owner) continue;
        const signed = contextFor(orgs, caller, {
          userId: me.userId,
          email: me.email,
          name: me.name,
          accountId: m.accountId,
          accountKind: "company",
          accountName: m.name,
          role: me.role,
          permissions: me.extras,
        });
        const moved = await callRpc(
          orgs.bus,
          "apps",
          rpcMethods.apps.moveOwned,
          {
            accountId: m.accountId,
            fromUserId: me.userId,
            to: { userId: owner.userId, email: owner.email, name: owner.name },
          },
          OwnedAppsSchema,
          { ctx: signed, requestId },
        );
        await orgs.db.transaction(async (tx) => {
          await tx.delete(members).where(and(eq(members.accountId, m.accountId), eq(members.userId, me.userId)));
          await recordOrgEvent(tx, caller, m.accountId, {
            entity: "member",
            verb: "left",
            summary:
              `${me.name} <${me.email}> deleted their Hatch account and left ${m.name}` +
              (moved.apps.length ? `; ${plural(moved.apps.length, "app")} moved to ${owner.email}` : ""),
            details: {
              member: { userId: me.userId, email: me.email },
              reason: "account_deleted",
              appsRecipient: owner.email,
              movedApps: moved.apps.map((a) => a.address),
            },
            affectedUsers: [me.userId],
          });
        });
        left.push({ name: m.name, ownerEmail: owner.email, apps: moved.apps });
      }
      // The person (their memberships go with them) and the accounts nobody else belongs to.
      await orgs.db.transaction(async (tx) => {
        await tx.delete(people).where(eq(people.userId, input.userId));
        const solo = plan.soloAccounts.map((a) => a.id);
        if (solo.length) await tx.delete(accounts).where(inArray(accounts.id, solo));
      });
      orgs.logger.info("account deleted", { userId: input.userId, existed: person !== null, left: left.length });
      return { left };
    },
    { writes: true },
  );
}
