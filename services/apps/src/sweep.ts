import type { Database, Logger } from "@hatch/platform";
import { lt } from "drizzle-orm";
import { confirmUses, folderUploads, uploads } from "./db/schema.ts";

const SWEEP_EVERY_MS = 10 * 60_000;

/** Drops upload URLs (files and folders) and used confirm tokens that have expired (past its expiry a token is refused anyway). */
export async function sweepExpired(
  db: Database,
  now = new Date(),
): Promise<{ uploads: number; folders: number; confirmations: number }> {
  const gone = await db.delete(uploads).where(lt(uploads.expiresAt, now)).returning({ token: uploads.token });
  const folders = await db
    .delete(folderUploads)
    .where(lt(folderUploads.expiresAt, now))
    .returning({ id: folderUploads.id });
  const used = await db.delete(confirmUses).where(lt(confirmUses.expiresAt, now)).returning({ id: confirmUses.id });
  return { uploads: gone.length, folders: folders.length, confirmations: used.length };
}

/** Runs the sweep every 10 minutes; the returned function stops it. */
export function startSweeper(db: Database, logger: Logger): () => void {
  const timer = setInterval(() => {
    sweepExpired(db).then(
      (counts) => logger.debug("swept expired rows", counts),
      (error: unknown) => logger.warn("sweep failed", { error }),
    );
  }, SWEEP_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
