import { newEvent, type CallContext } from "@hatch/contracts";
import { writeEvent, type Database } from "@hatch/platform";
import { outbox } from "./db/schema.ts";

/** The app an event is about, as the apps table has it. */
export interface EventApp {
  address: string;
  name: string;
  accountId: string;
}

/** Verbs of app events; the activity log shows them as `app.<verb>`. */
export type AppEventVerb =
  | "published"
  | "shared"
  | "rolled_back"
  | "deleted"
  | "paused"
  | "unpaused"
  | "moved"
  | (string & {});

const PHRASES: Record<string, string> = {
  published: "published",
  shared: "changed who can open",
  rolled_back: "rolled back",
  deleted: "deleted",
  paused: "paused",
  unpaused: "unpaused",
  moved: "moved",
  secret_set: "set a secret of",
  secret_deleted: "deleted a secret of",
  secret_confirmed: "confirmed where a secret goes for",
  ai_choice_changed: "changed the AI key choice of",
  ai_key_added: "added an AI key to",
  ai_key_deleted: "deleted an AI key of",
  document_deleted: "deleted a document of",
  file_deleted: "deleted a file of",
};

function summaryOf(ctx: CallContext | null, verb: string, app: EventApp, details: Record<string, unknown>): string {
  const who = ctx ? `${ctx.name} <${ctx.email}>` : "Hatch";
  const what = `${PHRASES[verb] ?? verb.replace(/_/g, " ")} ${app.name} (${app.address})`;
  const extra =
    typeof details.summary === "string"
      ? `: ${details.summary}`
      : typeof details.reason === "string" && details.reason
        ? `: ${details.reason}`
        : "";
  return `${who} ${what}${extra}`;
}

/**
 * Records an event about an app inside the transaction that changes it (publish, share, rollback, delete,
 * pause, owner change); the relay publishes it on `events.apps.app.<verb>`. `details.summary`, when given,
 * is added to the activity log's line (e.g. "version 3"); `details.reason` likewise.
 */
export async function appEvent(
  tx: Pick<Database, "insert">,
  ctx: CallContext | null,
  verb: AppEventVerb,
  app: EventApp,
  details: Record<string, unknown> = {},
): Promise<void> {
  const sameAccount = ctx?.account === app.accountId;
  await writeEvent(
    tx,
    outbox,
    newEvent("apps", ctx, {
      entity: "app",
      verb,
      summary: summaryOf(ctx, verb, app, details),
      app: app.address,
      account: app.accountId,
      org: sameAccount ? (ctx?.org ?? null) : null,
      details,
    }),
  );
}
