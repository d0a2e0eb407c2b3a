import {
  bindRpc,
  MailOutboxSchema,
  ToolError,
  VerificationMailInputSchema,
  type MailOutbox,
  type VerificationMailSent,
} from "@hatch/shared";
import { and, count, eq, gt, sql } from "drizzle-orm";
import { z } from "zod";
import type { OrgsContext } from "../context.ts";
import { mails } from "../db/schema.ts";
import { VERIFICATION_SUBJECT, verificationMail } from "../mail/verification-mail.ts";

/** At most this many verification mails to one address per hour (sign-up's included). */
const VERIFICATION_MAILS_PER_HOUR = 5;

/** The dev outbox of the caller: only mail addressed to their own email, and only when mail is not sent. */
export function mailOutboxRpc(orgs: OrgsContext) {
  return bindRpc(z.object({}).strict(), async ({ ctx }): Promise<MailOutbox> => {
    if (!ctx) throw new ToolError("forbidden", "A signed call context is required.");
    if (orgs.mailer.mode !== "outbox") return MailOutboxSchema.parse({ enabled: false, mails: [] });
    return { enabled: true, mails: await orgs.mailer.outbox(50, ctx.email) };
  });
}

/**
 * Mails the caller the link that verifies their email. The address is the signed ctx's, never an input: this
 * cannot be used to mail anyone else. Limited per address, counted in the mails table (shared by every instance).
 */
export function sendVerificationMailRpc(orgs: OrgsContext) {
  return bindRpc(
    VerificationMailInputSchema,
    async ({ ctx, input }): Promise<VerificationMailSent> => {
      if (!ctx) throw new ToolError("forbidden", "A signed call context is required.");
      const to = ctx.email.toLowerCase();
      const hourAgo = new Date(Date.now() - 3_600_000);
      const [sent] = await orgs.db
        .select({ n: count() })
        .from(mails)
        .where(
          and(eq(sql`lower(${mails.to})`, to), eq(mails.subject, VERIFICATION_SUBJECT), gt(mails.createdAt, hourAgo)),
        );
      if ((sent?.n ?? 0) >= VERIFICATION_MAILS_PER_HOUR) {
        throw new ToolError(
          "limit_exceeded",
          `${VERIFICATION_MAILS_PER_HOUR} verification mails went to ${ctx.email} in the last hour. Use the newest one, or try again in an hour.`,
        );
      }
      const link = `${orgs.config.baseUrl}/verify-email?token=${input.token}`;
      await orgs.db.transaction((tx) => orgs.mailer.queue(tx, [verificationMail({ to, name: ctx.name, link })]));
      void orgs.mailer.kick();
      orgs.logger.info("verification mail queued", { userId: ctx.sub, delivery: orgs.mailer.mode });
      return { delivery: orgs.mailer.mode };
    },
    { writes: true },
  );
}
