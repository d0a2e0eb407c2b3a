import { CLIENT_KINDS, QuestionSchema, randomId, type ClientKind, type Question } from "@hatch/contracts";
import { type Database } from "@hatch/platform";
import { and, eq, gt, isNotNull, isNull, lt } from "drizzle-orm";
import { pendingConfirmations } from "../db/schema.ts";

/** Rows are kept a day past expiry so their owner still sees "expired" or "already confirmed", not "unknown". */
const KEEP_AFTER_EXPIRY_MS = 86_400_000;

export type ConfirmationState = "pending" | "confirmed" | "cancelled";

/** How the user's answer on the confirm page ended, for the AI client that asked. */
export type ConfirmationOutcome = "done" | "failed" | "declined";

/** A question waiting for (or answered by) the user on the confirm page. */
export interface PendingConfirmation {
  id: string;
  userId: string;
  grantId: string;
  client: { kind: ClientKind; name: string };
  service: string;
  tool: string;
  input: unknown;
  message: string;
  schema: Question["schema"];
  confirmToken: string;
  expiresAt: Date;
  state: ConfirmationState;
  result: string | null;
  createdAt: Date;
  decidedAt: Date | null;
}

export type NewConfirmation = Pick<
  PendingConfirmation,
  "userId" | "grantId" | "client" | "service" | "tool" | "input" | "expiresAt"
> & {
  question: Question;
};

/** Stores a question and returns its id: 24 random bytes, the only secret part of the link. */
export async function insertConfirmation(db: Database, entry: NewConfirmation): Promise<string> {
  const id = randomId(24);
  await db.insert(pendingConfirmations).values({
    id,
    userId: entry.userId,
    grantId: entry.grantId,
    clientKind: entry.client.kind,
    clientName: entry.client.name,
    service: entry.service,
    tool: entry.tool,
    input: entry.input ?? null,
    message: entry.question.message,
    schema: entry.question.schema,
    confirmToken: entry.question.confirm,
    expiresAt: entry.expiresAt,
  });
  return id;
}

/** The user's own confirmation; another user's looks exactly like an unknown id. */
export async function findConfirmation(db: Database, id: string, userId: string): Promise<PendingConfirmation | null> {
  const [row] = await db
    .select()
    .from(pendingConfirmations)
    .where(and(eq(pendingConfirmations.id, id), eq(pendingConfirmations.userId, userId)))
    .limit(1);
  return row ? toConfirmation(row) : null;
}

/**
 * Moves a live pending confirmation to `confirmed` or `cancelled` in one statement, so of two concurrent
 * answers exactly one wins. Null when it is not the user's, not pending any more, or expired.
 */
export async function decideConfirmation(
  db: Database,
  id: string,
  userId: string,
  to: "confirmed" | "cancelled",
  now: Date,
): Promise<PendingConfirmation | null> {
  const [row] = await db
    .update(pendingConfirmations)
    // Cancel is the whole answer: its outcome is known at once. Confirm's comes with the service's reply (recordResult).
    .set({ state: to, decidedAt: now, ...(to === "cancelled" ? { outcome: "declined" } : {}) })
    .where(
      and(
        eq(pendingConfirmations.id, id),
        eq(pendingConfirmations.userId, userId),
        eq(pendingConfirmations.state, "pending"),
        gt(pendingConfirmations.expiresAt, now),
      ),
    )
    .returning();
  return row ? toConfirmation(row) : null;
}

/** What the service answered, shown again if the user reloads or reopens the link, and told to the AI client once. */
export async function recordResult(
  db: Database,
  id: string,
  result: string,
  outcome: Exclude<ConfirmationOutcome, "declined">,
): Promise<void> {
  await db.update(pendingConfirmations).set({ result, outcome }).where(eq(pendingConfirmations.id, id));
}

/** An answer given on the confirm page that the AI client has not been told yet. */
export interface UnreportedOutcome {
  tool: string;
  outcome: ConfirmationOutcome;
  result: string | null;
  decidedAt: Date | null;
}

/**
 * The grant's outcomes not told yet, marked told in the same statement: of two calls at once, one carries them. Uses
 * the partial index on unreported outcomes, so a grant with none costs one index probe.
 */
export async function takeUnreported(db: Database, grantId: string, now: Date): Promise<UnreportedOutcome[]> {
  const rows = await db
    .update(pendingConfirmations)
    .set({ reportedAt: now })
    .where(
      and(
        eq(pendingConfirmations.grantId, grantId),
        isNotNull(pendingConfirmations.outcome),
        isNull(pendingConfirmations.reportedAt),
      ),
    )
    .returning({
      tool: pendingConfirmations.tool,
      outcome: pendingConfirmations.outcome,
      result: pendingConfirmations.result,
      decidedAt: pendingConfirmations.decidedAt,
    });
  return rows
    .map((row) => ({ ...row, outcome: row.outcome as ConfirmationOutcome }))
    .sort((a, b) => (a.decidedAt?.getTime() ?? 0) - (b.decidedAt?.getTime() ?? 0));
}

/** Deletes confirmations a day past their expiry; the gateway's housekeeping runs it. */
export async function sweepConfirmations(db: Database, now: Date): Promise<number> {
  const removed = await db
    .delete(pendingConfirmations)
    .where(lt(pendingConfirmations.expiresAt, new Date(now.getTime() - KEEP_AFTER_EXPIRY_MS)))
    .returning({ id: pendingConfirmations.id });
  return removed.length;
}

type Row = typeof pendingConfirmations.$inferSelect;

function toConfirmation(row: Row): PendingConfirmation {
  const kind = (CLIENT_KINDS as readonly string[]).includes(row.clientKind) ? (row.clientKind as ClientKind) : "other";
  const state = row.state === "confirmed" || row.state === "cancelled" ? row.state : "pending";
  return {
    id: row.id,
    userId: row.userId,
    grantId: row.grantId,
    client: { kind, name: row.clientName },
    service: row.service,
    tool: row.tool,
    input: row.input,
    message: row.message,
    // Written by this gateway from a validated question; parsed again so a bad row fails loudly here.
    schema: QuestionSchema.shape.schema.parse(row.schema),
    confirmToken: row.confirmToken,
    expiresAt: row.expiresAt,
    state,
    result: row.result,
    createdAt: row.createdAt,
    decidedAt: row.decidedAt,
  };
}
