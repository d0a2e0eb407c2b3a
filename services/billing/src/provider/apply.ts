import { newEvent } from "@hatch/contracts";
import { writeEvent, type Database, type Logger } from "@hatch/platform";
import { eq } from "drizzle-orm";
import { accounts, outbox, providerEvents } from "../db/schema.ts";
import type { BillingUpdate } from "./types.ts";

/**
 * Applies one provider update in one transaction: recorded by id first (a replay is a duplicate and changes nothing),
 * then the account's plan, state, seats and card flag, unless a later update was already applied. A plan or state
 * change writes `billing.account.plan_changed`. An update for a customer billing does not know is recorded and
 * ignored (Stripe sends events for every customer of the account, not only Hatch's).
 */
export async function applyBillingUpdate(
  db: Database,
  logger: Logger,
  update: BillingUpdate,
): Promise<{ handled: boolean; duplicate: boolean }> {
  return db.transaction(async (tx) => {
    const inserted = await tx
      .insert(providerEvents)
      .values({ id: update.id, type: update.type })
      .onConflictDoNothing()
      .returning({ id: providerEvents.id });
    if (inserted.length === 0) return { handled: false, duplicate: true };
    const [account] = await tx.select().from(accounts).where(eq(accounts.customerId, update.customerId)).for("update");
    if (!account) {
      logger.warn("provider event for an unknown customer ignored", { event: update.id, type: update.type });
      return { handled: false, duplicate: false };
    }
    if (account.updatedFrom && update.at < account.updatedFrom) return { handled: false, duplicate: false };
    const changes: Partial<typeof accounts.$inferInsert> = { updatedFrom: update.at, updatedAt: new Date() };
    if (update.cardOnFile !== undefined) changes.cardOnFile = update.cardOnFile;
    if (update.subscription) {
      changes.plan = update.subscription.plan;
      changes.state = update.subscription.state;
      changes.seats = update.subscription.seats;
      changes.subscriptionId = update.subscription.id;
      changes.currentPeriodEnd = update.subscription.currentPeriodEnd;
    }
    await tx.update(accounts).set(changes).where(eq(accounts.accountId, account.accountId));
    const planChanged =
      changes.plan !== undefined &&
      (changes.plan !== account.plan || changes.state !== account.state || changes.seats !== account.seats);
    if (planChanged) {
      await writeEvent(
        tx,
        outbox,
        newEvent("billing", null, {
          entity: "account",
          verb: "plan_changed",
          summary: `Plan ${account.plan} (${account.state}) became ${changes.plan} (${changes.state})`,
          app: null,
          account: account.accountId,
          org: null,
          details: {
            from: { plan: account.plan, state: account.state, seats: account.seats },
            to: { plan: changes.plan, state: changes.state, seats: changes.seats },
          },
        }),
      );
    }
    return { handled: true, duplicate: false };
  });
}
