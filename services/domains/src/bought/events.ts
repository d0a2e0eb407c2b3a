import { newEvent, type CallContext } from "@hatch/contracts";
import { writeEvent } from "@hatch/platform";
import type { Database } from "@hatch/platform";
import { outbox } from "../db/schema.ts";

type Tx = Parameters<Parameters<Database["transaction"]>[0]>[0];

/** A bought domain's event (`domains.domain.<verb>`), in the change's transaction; ctx null when a job made it. */
export async function domainEvent(
  tx: Tx,
  ctx: CallContext | null,
  row: { domain: string; accountId: string; address: string | null; accountKind?: string | null },
  verb: "bought" | "registered" | "live" | "registration_failed" | "refunded" | "renewed",
  summary: string,
  details: Record<string, unknown> = {},
): Promise<void> {
  await writeEvent(
    tx,
    outbox,
    newEvent("domains", ctx, {
      entity: "domain",
      verb,
      summary,
      app: row.address,
      account: row.accountId,
      org: row.accountKind === "company" ? row.accountId : (ctx?.org ?? null),
      details: { domain: row.domain, ...details },
    }),
  );
}
