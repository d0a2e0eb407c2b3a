import type { Database } from "@hatch/platform";
import { eq } from "drizzle-orm";
import { appsTable } from "../db/schema.ts";

/**
 * Shared-locks the app's row for the transaction. Taken before the app's data rows (a document, a file, the usage
 * row), in the order delete_tool takes them, so the two never deadlock: a delete of the app waits, or has already won
 * (false: the app is gone).
 */
export async function lockAppRow(tx: Pick<Database, "select">, appId: string): Promise<boolean> {
  const [row] = await tx.select({ id: appsTable.id }).from(appsTable).where(eq(appsTable.id, appId)).for("key share");
  return row !== undefined;
}
