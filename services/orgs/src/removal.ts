import {
  buildQuestion,
  type AiReset,
  OwnedAppsSchema,
  rpcMethods,
  ToolError,
  type org_member_update,
  type OwnedApps,
  type ToolInput,
  type ToolOutput,
  plural,
} from "@hatch/contracts";
import { callRpc, consumeConfirm, type ToolCall, type ToolOutcome } from "@hatch/platform";
import { and, eq } from "drizzle-orm";
import { contextFor, recordOrgEvent, type OrgsContext } from "./context.ts";
import { findPersonIn, returnToPersonalAccount } from "./db/accounts.ts";
import { listMembers, memberOut, type MemberView, type OrgCaller } from "./db/members.ts";
import { confirmUses, members } from "./db/schema.ts";
import { aiNowWords, aiResetMail } from "./mail/ai-reset-mail.ts";
import type { MailToQueue } from "./mail/mailer.ts";
import { canManage } from "./roles.ts";

type Input = ToolInput<typeof org_member_update>;
type Output = ToolOutput<typeof org_member_update>;

const appList = (apps: OwnedApps["apps"]) => apps.map((a) => `${a.name} (${a.address})`).join(", ");

/** Who may receive the apps: every other member. The default is the caller, or the owner when the caller leaves. */
function recipientsOf(all: MemberView[], target: MemberView, me: OrgCaller): { emails: string[]; fallback: string } {
  const others = all.filter((m) => m.userId !== target.userId);
  const fallback =
    target.userId !== me.userId ? me.email : (others.find((m) => m.role === "owner") ?? others[0])?.email;
  if (!fallback) throw new ToolError("conflict", "Nobody else is in the organization to receive the apps.");
  return { emails: others.map((m) => m.email.toLowerCase()), fallback: fallback.toLowerCase() };
}

function pickRecipient(candidate: unknown, emails: string[], what: string): string | undefined {
  if (candidate === undefined || candidate === null || candidate === "") return undefined;
  const email = typeof candidate === "string" ? candidate.toLowerCase() : "";
  if (!emails.includes(email))
    throw new ToolError(
      "invalid_input",
      `${what} must be another member of the organization (one of: ${emails.join(", ")}). Nothing was changed.`,
    );
  return email;
}

/**
 * Removal asks first: it lists the apps that will move and asks the user (in a form, or on a confirm page)
 * who receives them. On the confirmed answer the apps move (apps service, one transaction), then the
 * membership ends (here, one transaction that also spends the confirmation).
 */
export async function removeMember(
  orgs: OrgsContext,
  call: ToolCall<Input>,
  me: OrgCaller,
  target: MemberView,
): Promise<ToolOutcome<Output>> {
  const { ctx, input } = call;
  if (target.role === "owner")
    throw new ToolError(
      "forbidden",
      `${target.email} is the owner and cannot be removed. The owner can transfer ownership first (action transfer_ownership).`,
    );
  if (!canManage(me.role, target.role))
    throw new ToolError(
      "forbidden",
      `As ${me.role} you cannot remove ${target.email}, who is ${target.role}. Ask the owner or an admin.`,
    );
  const all = await listMembers(orgs.db, me.accountId);
  const { emails, fallback } = recipientsOf(all, target, me);
  const given = pickRecipient(input.appsRecipient, emails, "appsRecipient");
  const signed = contextFor(orgs, ctx, me);
  const rpc = { ctx: signed, requestId: call.requestId };
  const owned = await callRpc(
    orgs.bus,
    "apps",
    rpcMethods.apps.listOwned,
    { accountId: me.accountId, userId: target.userId },
    OwnedAppsSchema,
    rpc,
  );

  if (!call.confirmation) {
    const receiver = given ?? fallback;
    const others = emails.filter((email) => email !== receiver);
    const moving = owned.apps.length
      ? `Their ${owned.apps.length === 1 ? "app moves" : `${owned.apps.length} apps move`} to ${receiver === me.email.toLowerCase() ? `you (${receiver})` : receiver}: ${appList(owned.apps)}.` +
        (given || others.length === 0 ? "" : ` Another member may receive them instead: ${others.join(", ")}.`)
      : "They own no apps in the organization.";
    const question = buildQuestion(
      orgs.confirmKey,
      { sub: ctx.sub, tool: "org_member_update", input },
      {
        message: `Remove ${target.name} <${target.email}> from ${me.accountName}? ${moving}`,
        // Accepting the form (or pressing Confirm on the page) is the confirmation; the one field is the choice
        // of recipient, or a bare yes when there is nothing to move.
        properties: owned.apps.length
          ? {
              appsRecipient: {
                type: "string",
                title: "Who receives the apps",
                description: "The member who will own them",
                enum: emails,
                default: receiver,
              },
            }
          : { confirm: { type: "boolean", title: `Remove ${target.email}`, description: "Remove them now" } },
        required: [owned.apps.length ? "appsRecipient" : "confirm"],
        fallback: "link",
        data: { member: memberOut(target), appsToMove: owned.apps, appsRecipient: receiver },
      },
    );
    return { ask: question };
  }

  const answer = call.answer ?? {};
  if (answer.confirm !== true && typeof answer.appsRecipient !== "string") {
    throw new ToolError("invalid_input", `The user did not confirm removing ${target.email}, so nothing was changed.`);
  }
  const recipientEmail = pickRecipient(answer.appsRecipient, emails, "The chosen recipient") ?? given ?? fallback;
  const recipient = all.find((m) => m.email.toLowerCase() === recipientEmail)!;
  const moved = await callRpc(
    orgs.bus,
    "apps",
    rpcMethods.apps.moveOwned,
    {
      accountId: me.accountId,
      fromUserId: target.userId,
      to: { userId: recipient.userId, email: recipient.email, name: recipient.name },
    },
    OwnedAppsSchema,
    rpc,
  );
  const { resets, mails } = aiResetNotices(orgs, me, target, moved.aiReset ?? []);
  await orgs.db.transaction(async (tx) => {
    await consumeConfirm(tx, confirmUses, call.confirmation!);
    const targetNow = await findPersonIn(tx, target.userId);
    const gone = await tx
      .delete(members)
      .where(and(eq(members.accountId, me.accountId), eq(members.userId, target.userId)))
      .returning({ userId: members.userId });
    if (gone.length === 0)
      throw new ToolError("not_found", `${target.email} is no longer a member of ${me.accountName}.`);
    // They act in their personal account again, unless they act in another account of theirs (the dashboard may
    // remove someone from an organization they belong to beside the one they act in).
    if (!targetNow || targetNow.accountId === me.accountId) await returnToPersonalAccount(tx, target);
    await recordOrgEvent(tx, ctx, me.accountId, {
      entity: "member",
      verb: "removed",
      summary:
        `${me.name} <${me.email}> removed ${target.email} from ${me.accountName}` +
        (moved.apps.length ? `; ${plural(moved.apps.length, "app")} moved to ${recipient.email}` : ""),
      details: {
        member: { userId: target.userId, email: target.email },
        appsRecipient: recipient.email,
        movedApps: moved.apps.map((a) => a.address),
      },
      affectedUsers: [target.userId],
    });
    if (mails.length) await orgs.mailer.queue(tx, mails);
  });
  if (mails.length) void orgs.mailer.kick();
  return {
    text:
      `Removed ${target.email} from ${me.accountName}; they lose access on their next call.` +
      (moved.apps.length
        ? ` Their apps now belong to ${recipient.email}: ${appList(moved.apps)}.`
        : " They owned no apps here.") +
      resets,
    data: { status: "removed", member: null, appsToMove: moved.apps, appsRecipient: recipient.email },
  };
}

/**
 * A person's own AI key that stopped paying for apps (the removed member's, or anyone's on an app that changed owner):
 * the caller reads it in the answer, every other owner of such an app gets one mail, queued with the removal.
 */
function aiResetNotices(
  orgs: OrgsContext,
  me: OrgCaller,
  target: MemberView,
  reset: AiReset[],
): { resets: string; mails: MailToQueue[] } {
  if (reset.length === 0) return { resets: "", mails: [] };
  const byOwner = Map.groupBy(reset, (app) => app.owner.email.toLowerCase());
  byOwner.delete(me.email.toLowerCase());
  const mails = [...byOwner].map(([to, apps]) =>
    aiResetMail({
      to,
      orgName: me.accountName,
      remover: { name: me.name, email: me.email },
      removed: { name: target.name, email: target.email },
      apps,
      baseUrl: orgs.config.baseUrl,
    }),
  );
  const told = mails.length ? ` (mailed to ${mails.map((m) => m.to).join(", ")})` : "";
  const list = reset.map((app) => `${app.address}: ${aiNowWords(app.now)}`).join("; ");
  return { resets: ` A person's own AI key no longer pays for: ${list}${told}.`, mails };
}
