import type { MailToQueue } from "./mailer.ts";

/** The subject of every verification mail; the rate limit counts mails by it. */
export const VERIFICATION_SUBJECT = "Verify your email for Hatch";

/** The verification email: plain text, the link on a line of its own. */
export function verificationMail(input: { to: string; name: string; link: string }): MailToQueue {
  const body = `Hello ${input.name},

Someone (hopefully you) created a Hatch account with this email address. Open this link to verify it:

${input.link}

The link works for 24 hours. Until the address is verified, the account works with its own apps, but
invitations and apps shared with this address stay closed to it. If you did not sign up, ignore this email.
`;
  return { to: input.to, subject: VERIFICATION_SUBJECT, body };
}
