import type { MailToQueue } from "./mailer.ts";

/** The subject of every password reset mail; the rate limit counts mails by it. */
export const PASSWORD_RESET_SUBJECT = "Reset your Hatch password";

/** The password reset email: plain text, the link on a line of its own. */
export function passwordResetMail(input: { to: string; name: string; link: string }): MailToQueue {
  const body = `Hello ${input.name},

Someone (hopefully you) asked to reset the password of the Hatch account with this email address. Open this
link to choose a new password:

${input.link}

The link works once, for 1 hour. Setting a new password signs out every browser and disconnects every AI client
of the account; connect them again afterwards. If you did not ask for this, ignore this email: your password
stays as it is.
`;
  return { to: input.to, subject: PASSWORD_RESET_SUBJECT, body };
}
