import { bindRpc } from "@hatch/platform";
import {
  MailOutboxSchema,
  ToolError,
  VerificationMailInputSchema,
  type MailOutbox,
  type VerificationMailSent,
} from "@hatch/contracts";
import { and, count, eq, gt, sql } from "drizzle-orm";
import { z } from "zod";
import type { OrgsContext } from "../context.ts";
import { mails } from "../db/schema.ts";
import { PASSWORD_RESET_SUBJECT, passwordResetMail } from "../mail/password-reset-mail.ts";
import type { MailToQueue } from "../mail/mailer.ts";
import { VERIFICATION_SUBJECT, verificationMail } from "../mail/verification-mail.ts";

/** At most this many verification mails to one address per hour (sign-up's included). */
const VERIFICATION_MAILS_PER_HOUR = 5;
/** At most this many password reset mails to one address per hour. */
const PASSWORD_RESET_MAILS_PER_HOUR = 3;

/**
 * The dev outbox of the caller: only mail addressed to their own email, and only when mail is not sent. Until that
 * email is verified, only the verification mails: anyone can sign up with an address they do not own, and the
 * invitations to it are not theirs to open (the subject of an invitation always names who invited, so it never equals
 * the verification subject).
 */
export function mailOutboxRpc(orgs: OrgsContext) {
  return bindRpc(z.object({}).strict(), async ({ ctx }): Promise<MailOutbox> => {
    if (!ctx) throw new ToolError("forbidden", "A signed call context is required.");
    if (orgs.mailer.mode !== "outbox") return MailOutboxSchema.parse({ enabled: false, mails: [] });
    const only = ctx.emailVerified ? undefined : VERIFICATION_SUBJECT;
    return { enabled: true, mails: await orgs.mailer.outbox(50, ctx.email, only) };
  });
}

/** A mail of one kind to the ctx's own address, at most `perHour` of that subject to it per hour. */
interface LinkMailKind {
  subject: string;
  perHour: number;
  /** What the limit message calls these mails. */
  what: string;
  path: string;
  build(input: { to: string; name: string; link: string }): MailToQueue;
  log: string;
}

function linkMailRpc(orgs: OrgsContext, kind: LinkMailKind) {
  return bindRpc(
    VerificationMailInputSchema,
    async ({ ctx, input }): Promise<VerificationMailSent> => {
      if (!ctx) throw new ToolError("forbidden", "A signed call context is required.");
      const to = ctx.email.toLowerCase();
      const hourAgo = new Date(Date.now() - 3_600_000);
      const [sent] = await orgs.db
        .select({ n: count() })
        .from(mails)
        .where(and(eq(sql`lower(${mails.to})`, to), eq(mails.subject, kind.subject), gt(mails.createdAt, hourAgo)));
      if ((sent?.n ?? 0) >= kind.perHour) {
        throw new ToolError(
          "limit_exceeded",
          `${kind.perHour} ${kind.what} went to ${ctx.email} in the last hour. Use the newest one, or try again in an hour.`,
        );
      }
      const link = `${orgs.config.baseUrl}${kind.path}?token=${input.token}`;
      await orgs.db.transaction((tx) => orgs.mailer.queue(tx, [kind.build({ to, name: ctx.name, link })]));
      void orgs.mailer.kick();
      orgs.logger.info(kind.log, { userId: ctx.sub, delivery: orgs.mailer.mode });
      return { delivery: orgs.mailer.mode };
    },
    { writes: true },
  );
}

/**
 * Mails the caller the link that verifies their email. The address is the signed ctx's, never an input: this
 * cannot be used to mail anyone else. Limited per address, counted in the mails table (shared by every instance).
 */
export function sendVerificationMailRpc(orgs: OrgsContext) {
  return linkMailRpc(orgs, {
    subject: VERIFICATION_SUBJECT,
    perHour: VERIFICATION_MAILS_PER_HOUR,
    what: "verification mails",
    path: "/verify-email",
    build: verificationMail,
    log: "verification mail queued",
  });
}

/**
 * Mails the user of the signed ctx (the gateway signs one for the account a reset was asked for) the link that sets
 * a new password; the gateway made the token. Same rules as verification: their own address only, limited per hour.
 */
export function sendPasswordResetMailRpc(orgs: OrgsContext) {
  return linkMailRpc(orgs, {
    subject: PASSWORD_RESET_SUBJECT,
    perHour: PASSWORD_RESET_MAILS_PER_HOUR,
    what: "password reset mails",
    path: "/reset-password",
    build: passwordResetMail,
    log: "password reset mail queued",
  });
}
