import type { MailToQueue } from "./mailer.ts";

export interface InvitationMailInput {
  to: string;
  orgName: string;
  role: string;
  inviter: { name: string; email: string };
  link: string;
  expiresAt: Date;
  message?: string;
}

const ARTICLE: Record<string, string> = { admin: "an admin", manager: "a manager", member: "a member" };

/** The invitation email: plain text, the accept link on a line of its own. */
export function invitationMail(input: InvitationMailInput): MailToQueue {
  const note = input.message?.trim()
    ? `\n${input.inviter.name} wrote:\n\n${input.message
        .trim()
        .split(/\r?\n/)
        .map((l) => `  ${l}`)
        .join("\n")}\n`
    : "";
  const expires = `${input.expiresAt.toISOString().slice(0, 16).replace("T", " ")} UTC`;
  const body = `${input.inviter.name} (${input.inviter.email}) invited you to join ${input.orgName} on Hatch as ${ARTICLE[input.role] ?? input.role}.
${note}
Accept the invitation:

${input.link}

The link works until ${expires}. If you have no Hatch account yet, you can create one on the way, with this
email address or another one. If you did not expect this invitation, ignore this email.
`;
  return { to: input.to, subject: `${input.inviter.name} invited you to ${input.orgName} on Hatch`, body };
}
