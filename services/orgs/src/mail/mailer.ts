import { randomId } from "@hatch/contracts";
import { createBatchLoop, type Database, type Logger } from "@hatch/platform";
import { and, asc, desc, eq, inArray, isNull, lte, or, sql } from "drizzle-orm";
import type { OrgsConfig } from "../config.ts";
import type { Tx } from "../db/accounts.ts";
import { mails } from "../db/schema.ts";
import { createSmtpSender, type OutgoingMail, type SmtpSender, type SmtpOptions } from "./smtp.ts";

const BATCH = 50;
const CLAIM_MS = 120_000;
const MAX_ATTEMPTS = 8;
const POLL_MS = 15_000;

export interface MailToQueue {
  to: string;
  subject: string;
  body: string;
}

/**
 * Mail leaves in two steps: `queue` writes it in the caller's transaction (no mail for a change that rolled
 * back, none lost for one that committed), then `kick` sends what is due, by SMTP when configured. Without
 * SMTP, mails are kept for the dev outbox page and nothing is sent.
 */
export interface Mailer {
  readonly mode: "smtp" | "outbox";
  queue(tx: Tx, mail: MailToQueue[]): Promise<void>;
  /** Sends what is due now; resolves when this pass is done (never throws). */
  kick(): Promise<void>;
  start(): void;
  stop(): Promise<void>;
  /** The latest mails to `to` kept for the dev outbox (newest first), only those with `subject` when given. */
  outbox(
    limit: number,
    to: string,
    subject?: string,
  ): Promise<{ id: string; to: string; subject: string; body: string; createdAt: string }[]>;
}

/** After a failed attempt: 1 min, doubling, at most 2 h. */
const retryDelayMs = (attempts: number) => Math.min(2 * 3_600_000, 60_000 * 2 ** Math.max(0, attempts - 1));

export function createMailer(options: {
  db: Database;
  config: OrgsConfig;
  logger: Logger;
  smtp?: SmtpOptions;
}): Mailer {
  const { db, config } = options;
  const log = options.logger.child({ component: "mailer" });
  const smtp = config.smtp;
  // One pooled transport for the mailer's life: its connections are reused across passes.
  let sender: SmtpSender | null = null;

  /** Claims due mails for this process (another instance skips them until the claim lapses). */
  async function claim(): Promise<(typeof mails.$inferSelect)[]> {
    const now = new Date();
    const due = and(
      eq(mails.status, "pending"),
      lte(mails.nextAttemptAt, now),
      or(isNull(mails.lockedUntil), lte(mails.lockedUntil, now)),
    );
    return db.transaction(async (tx) => {
      const ids = await tx
        .select({ id: mails.id })
        .from(mails)
        .where(due)
        .orderBy(asc(mails.nextAttemptAt))
        .limit(BATCH)
        .for("update", { skipLocked: true });
      if (ids.length === 0) return [];
      return tx
        .update(mails)
        .set({ lockedUntil: new Date(now.getTime() + CLAIM_MS) })
        .where(
          inArray(
            mails.id,
            ids.map((r) => r.id),
          ),
        )
        .returning();
    });
  }

  async function deliver(): Promise<boolean> {
    if (!smtp) return false;
    const batch = await claim();
    if (batch.length === 0) return false;
    const outgoing: OutgoingMail[] = batch.map((m) => ({
      id: m.id,
      from: config.mailFrom,
      to: m.to,
      subject: m.subject,
      body: m.body ?? "",
    }));
    sender ??= createSmtpSender(smtp, options.smtp);
    const outcomes = await sender.send(outgoing);
    const later = outcomes.flatMap((o) => (!o.ok && !o.permanent ? [o] : []));
    // One line per pass, with the first reason (SMTP's own text: never a password nor a body).
    if (later.length > 0)
      log.warn("SMTP delivery failed; mails will be retried", { count: later.length, error: later[0]!.error });
    for (const outcome of outcomes) {
      const attempts = (batch.find((m) => m.id === outcome.id)?.attempts ?? 0) + 1;
      if (outcome.ok) {
        // The body holds a live invitation link: once delivered it is not kept.
        await db
          .update(mails)
          .set({ status: "sent", body: null, sentAt: new Date(), attempts, lockedUntil: null })
          .where(eq(mails.id, outcome.id));
        continue;
      }
      const giveUp = outcome.permanent || attempts >= MAX_ATTEMPTS;
      if (giveUp) log.error("mail given up", { mail: outcome.id, attempts, error: outcome.error });
      await db
        .update(mails)
        .set({
          status: giveUp ? "failed" : "pending",
          attempts,
          lastError: outcome.error.slice(0, 500),
          lockedUntil: null,
          nextAttemptAt: new Date(Date.now() + retryDelayMs(attempts)),
        })
        .where(eq(mails.id, outcome.id));
    }
    return batch.length === BATCH;
  }

  const loop = createBatchLoop({ pass: deliver, pollMs: POLL_MS, logger: log, failure: "mail delivery pass failed" });
  const kick = (): Promise<void> => (smtp ? loop.run() : Promise.resolve());

  return {
    mode: smtp ? "smtp" : "outbox",
    async queue(tx, list) {
      if (list.length === 0) return;
      const status: "pending" | "outbox" = smtp ? "pending" : "outbox";
      await tx
        .insert(mails)
        .values(list.map((m) => ({ id: `mail_${randomId(12)}`, to: m.to, subject: m.subject, body: m.body, status })));
    },
    kick,
    start() {
      if (smtp) loop.start();
    },
    async stop() {
      await loop.stop();
      sender?.close();
      sender = null;
    },
    async outbox(limit, to, subject) {
      const rows = await db
        .select()
        .from(mails)
        .where(
          and(
            eq(mails.status, "outbox"),
            eq(sql`lower(${mails.to})`, to.toLowerCase()),
            subject === undefined ? undefined : eq(mails.subject, subject),
          ),
        )
        .orderBy(desc(mails.createdAt), desc(sql`${mails.id}`))
        .limit(limit);
      return rows.map((m) => ({
        id: m.id,
        to: m.to,
        subject: m.subject,
        body: m.body ?? "",
        createdAt: m.createdAt.toISOString(),
      }));
    },
  };
}
