import { decodeJson, encodeJson, type Bus, type BusSubscription, type Database, type Logger } from "@hatch/platform";
import { takeUnreported, type UnreportedOutcome } from "./store.ts";

// What the user answered on a confirm page reaches the AI client that asked on its next tool call under the same
// grant, once: the confirm page records the outcome in the database (any gateway copy can tell it) and says on the bus
// that the grant has one. Each copy remembers, per grant, that it found none (so a tool call costs a map lookup, not a
// query); the bus message drops that memory on every copy, and it lasts at most CLEAR_FOR_MS in case one was missed.

/** Told to every gateway copy when a grant has an outcome its client was not told yet. */
export const CONFIRM_OUTCOME_SUBJECT = "broadcast.gateway.confirm.outcome";
/** How long "this grant has nothing to tell" is believed without asking the database (a missed bus message). */
const CLEAR_FOR_MS = 30_000;
const MAX_GRANTS = 10_000;
/** An outcome's text is the service's answer; the line carries its start. */
const RESULT_CHARS = 400;

export interface ConfirmOutcomes {
  /** The lines to add to this grant's tool result (each outcome once, on whichever copy asks first), or null. */
  take(grantId: string): Promise<string | null>;
  /** The confirm page recorded an outcome for this grant: every copy asks the database on the grant's next call. */
  recorded(grantId: string): void;
  close(): void;
}

export function createConfirmOutcomes(deps: {
  db: Database;
  bus: Bus;
  logger: Logger;
  now?: () => number;
}): ConfirmOutcomes {
  const now = deps.now ?? Date.now;
  /** grant → when it was found with nothing to tell. */
  const clear = new Map<string, number>();
  /** Moves on every recorded outcome, so a lookup that started before one cannot mark its grant clear. */
  let generation = 0;
  const forget = (grantId: string) => {
    generation++;
    clear.delete(grantId);
  };
  const subscription: BusSubscription = deps.bus.subscribe(CONFIRM_OUTCOME_SUBJECT, (msg) => {
    const { grantId } = decodeJson(msg.data) as { grantId?: unknown };
    if (typeof grantId === "string") forget(grantId);
  });

  return {
    async take(grantId) {
      const seen = clear.get(grantId);
      if (seen !== undefined && now() - seen < CLEAR_FOR_MS) return null;
      const started = generation;
      let outcomes: UnreportedOutcome[];
      try {
        outcomes = await takeUnreported(deps.db, grantId, new Date(now()));
      } catch (error) {
        // Telling it later is fine; failing the tool call for it is not.
        deps.logger.warn("confirm outcomes could not be read", { error });
        return null;
      }
      if (generation === started) {
        clear.delete(grantId);
        clear.set(grantId, now());
        if (clear.size > MAX_GRANTS) clear.delete(clear.keys().next().value as string);
      }
      return outcomes.length === 0 ? null : outcomes.map(lineOf).join("\n");
    },
    recorded(grantId) {
      forget(grantId);
      deps.bus.publish(CONFIRM_OUTCOME_SUBJECT, encodeJson({ grantId }));
    },
    close() {
      subscription.unsubscribe();
    },
  };
}

/** "On the confirm page, the user confirmed buy_domain: Bought example.com …" */
export function lineOf(outcome: Pick<UnreportedOutcome, "tool" | "outcome" | "result">): string {
  const said = (outcome.result ?? "").replace(/\s+/g, " ").trim();
  const short = said.length > RESULT_CHARS ? `${said.slice(0, RESULT_CHARS - 1)}…` : said;
  switch (outcome.outcome) {
    case "declined":
      return `On the confirm page, the user declined ${outcome.tool}: nothing was changed.`;
    case "failed":
      return `On the confirm page, the user confirmed ${outcome.tool}, but it was not done: ${short}`;
    case "done":
      return `On the confirm page, the user confirmed ${outcome.tool}: ${short}`;
  }
}
