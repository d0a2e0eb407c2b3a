import { text, timestamp, type PgSchema } from "drizzle-orm/pg-core";
import { type ConfirmClaims, confirmProblem, ToolError } from "@hatch/contracts";
import type { Database } from "./db.ts";

/** The table a service records used confirm tokens in; each service adds it to its own schema. */
export function confirmUsesTable(schema: PgSchema) {
  return schema.table("confirm_uses", {
    id: text("id").primaryKey(),
    /** Kept until the token would have expired anyway; the sweep may drop older rows. */
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    usedAt: timestamp("used_at", { withTimezone: true }).notNull().defaultNow(),
  });
}
export type ConfirmUsesTable = ReturnType<typeof confirmUsesTable>;

/** Marks a confirm token used, inside the caller's transaction; a second use is refused. */
export async function consumeConfirm(
  tx: Pick<Database, "insert">,
  table: ConfirmUsesTable,
  claims: ConfirmClaims,
): Promise<void> {
  const rows = await tx
    .insert(table)
    .values({ id: claims.id, expiresAt: new Date(claims.exp * 1000) })
    .onConflictDoNothing()
    .returning({ id: table.id });
  if (rows.length === 0) throw new ToolError("conflict", confirmProblem("used"));
}
