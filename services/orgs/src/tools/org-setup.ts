import { bindTool } from "@hatch/platform";
import { org_setup, ToolError, type CallContext, type ToolOutput } from "@hatch/contracts";
import { eq } from "drizzle-orm";
import { acceptInvitation } from "../accept.ts";
import { invitationsForEmail } from "../db/invitations.ts";
import { recordOrgEvent, type OrgsContext } from "../context.ts";
import { callerPerson, ensurePerson, findPersonIn, memberIn, newAccountId, type PersonView } from "../db/accounts.ts";
import { accounts, members, people } from "../db/schema.ts";
import { effectivePermissions, isCompanyAdmin } from "../roles.ts";

type Output = ToolOutput<typeof org_setup>;

function alreadyInOrg(person: PersonView): ToolError {
  return new ToolError(
    "conflict",
    `You already act in the organization ${person.accountName} (as ${person.role}); a person belongs to one organization ` +
      "at a time. Nothing was changed. org shows it.",
  );
}

function requireName(name: string | undefined, action: string): string {
  const trimmed = name?.trim();
  if (!trimmed)
    throw new ToolError(
      "invalid_input",
      `Give the organization's name in name for action ${action}, as the user wants it.`,
    );
  return trimmed;
}

/** A new company account with the caller as its owner; their personal account (and its apps) stays. */
async function create(orgs: OrgsContext, ctx: CallContext, name: string): Promise<Output> {
  const me = await ensurePerson(orgs.db, { userId: ctx.sub, email: ctx.email, name: ctx.name });
  const id = newAccountId();
  await orgs.db.transaction(async (tx) => {
    const current = await findPersonIn(tx, me.userId);
    if (current?.accountKind === "company") throw alreadyInOrg(current);
    await tx.insert(accounts).values({ id, kind: "company", name });
    await tx.insert(members).values({ accountId: id, userId: me.userId, role: "owner", permissions: [] });
    await tx.update(people).set({ activeAccountId: id }).where(eq(people.userId, me.userId));
    await recordOrgEvent(tx, ctx, id, {
      entity: "org",
      verb: "created",
      summary: `${me.name} <${me.email}> created the organization ${name}`,
      details: { name },
      affectedUsers: [me.userId],
    });
  });
  return { status: "created", org: { id, name }, role: "owner", permissions: effectivePermissions("owner", []) };
}

/** The caller's personal account becomes a company, same id: its apps stay where they are and so come along. */
async function convert(orgs: OrgsContext, ctx: CallContext, name: string): Promise<Output> {
  const me = await ensurePerson(orgs.db, { userId: ctx.sub, email: ctx.email, name: ctx.name });
  await orgs.db.transaction(async (tx) => {
    const current = await findPersonIn(tx, me.userId);
    if (!current) throw new Error("person vanished");
    if (current.accountKind === "company") throw alreadyInOrg(current);
    await tx.update(accounts).set({ kind: "company", name }).where(eq(accounts.id, current.accountId));
    await recordOrgEvent(tx, ctx, current.accountId, {
      entity: "org",
      verb: "converted",
      summary: `${me.name} <${me.email}> turned their personal account into the organization ${name}`,
      details: { name, previousName: current.accountName },
      affectedUsers: [me.userId],
    });
  });
  return {
    status: "converted",
    org: { id: me.accountId, name },
    role: "owner",
    permissions: effectivePermissions("owner", []),
  };
}

/** The owner or an admin gives the organization a new name; every member's next call carries it. */
async function rename(orgs: OrgsContext, ctx: CallContext, name: string): Promise<Output> {
  const me = await callerPerson(orgs.db, ctx);
  if (me.accountKind !== "company")
    throw new ToolError("not_found", "You are in no organization, so there is nothing to rename. Nothing was changed.");
  if (!isCompanyAdmin(me.role))
    throw new ToolError(
      "forbidden",
      `Only the owner and admins of ${me.accountName} rename it; you are a ${me.role}. Nothing was changed.`,
    );
  await orgs.db.transaction(async (tx) => {
    // Locks the person's row (no change of whom they belong to meanwhile), then reads their role in this account now.
    await findPersonIn(tx, me.userId);
    const current = await memberIn(tx, me.userId, me.accountId);
    if (!current || !isCompanyAdmin(current.role))
      throw new ToolError("conflict", "Your role in the organization changed meanwhile. Nothing was changed.");
    await tx.update(accounts).set({ name }).where(eq(accounts.id, me.accountId));
    const everyone = await tx
      .select({ userId: members.userId })
      .from(members)
      .where(eq(members.accountId, me.accountId));
    await recordOrgEvent(tx, ctx, me.accountId, {
      entity: "org",
      verb: "renamed",
      summary: `${me.name} <${me.email}> renamed the organization ${me.accountName} to ${name}`,
      details: { name, previousName: me.accountName },
      affectedUsers: everyone.map((m) => m.userId),
    });
  });
  return {
    status: "renamed",
    org: { id: me.accountId, name },
    role: me.role,
    permissions: effectivePermissions(me.role, me.permissions),
  };
}

/** accept without an invitationId: the one invitation waiting for the caller; none or several is an answer that lists them. */
async function theOneWaiting(orgs: OrgsContext, ctx: CallContext): Promise<string> {
  if (!ctx.emailVerified)
    throw new ToolError(
      "forbidden",
      `Accepting an invitation needs a verified email; ${ctx.email} is not verified yet. Verify it from the sign-in page, or open the link in the invitation email.`,
    );
  const waiting = await invitationsForEmail(orgs.db, ctx.email);
  if (waiting.length === 1) return waiting[0]!.invitation.id;
  if (waiting.length === 0)
    throw new ToolError(
      "not_found",
      `No invitation is waiting for ${ctx.email}. Ask the organization to invite this address.`,
    );
  const list = waiting.map(({ invitation, orgName }) => `${orgName} (invitationId ${invitation.id})`).join(", ");
  throw new ToolError(
    "invalid_input",
    `Several invitations are waiting: ${list}. Ask the user which organization to join and call again with its invitationId.`,
  );
}

export function orgSetupTool(orgs: OrgsContext) {
  return bindTool(org_setup, async ({ ctx, input }) => {
    if (input.action === "accept") {
      const joined = await acceptInvitation(orgs, ctx, { id: input.invitationId ?? (await theOneWaiting(orgs, ctx)) });
      return {
        text: `Joined ${joined.org.name} as ${joined.role}. From the next call on, you act in ${joined.org.name}.`,
        data: { status: "joined" as const, org: joined.org, role: joined.role, permissions: joined.permissions },
      };
    }
    const name = requireName(input.name, input.action);
    if (input.action === "rename") {
      const data = await rename(orgs, ctx, name);
      return { text: `The organization is now called ${name}.`, data };
    }
    const data = input.action === "create" ? await create(orgs, ctx, name) : await convert(orgs, ctx, name);
    const text =
      input.action === "create"
        ? `Created the organization ${name} with you as its owner; you now act in it. Your personal apps stay in your personal account. org_invite adds people.`
        : `Your account is now the organization ${name}, with you as its owner; its apps came along. org_invite adds people.`;
    return { text, data };
  });
}
