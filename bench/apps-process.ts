// The apps service as a benchmark child process starts it: `bun run dev`'s wiring (in-process bus) on the given
// database, stopped cleanly on SIGTERM or SIGINT. Shared by the app host and data bench servers.
import { createLogger, createMemoryBus, type DatabaseHandle } from "@hatch/platform";
import { deriveKey } from "@hatch/contracts";
import { startAppsService, type AppsService } from "@hatch/apps";
import { randomBytes } from "node:crypto";

export async function startBenchApps(
  database: DatabaseHandle,
  env: Record<string, string>,
  options: { secret?: string; onStop?: () => Promise<void> } = {},
): Promise<AppsService> {
  const logger = createLogger({ level: "warn" });
  const secret = options.secret ?? randomBytes(32).toString("hex");
  const bus = createMemoryBus({ logger });
  const apps = await startAppsService({
    bus,
    db: database.db,
    contextKey: deriveKey(secret, "ctx"),
    secret,
    env,
    logger,
  });
  const stop = async () => {
    await apps.stop();
    await bus.drain();
    await database.close();
    await options.onStop?.();
    process.exit(0);
  };
  process.once("SIGTERM", () => void stop());
  process.once("SIGINT", () => void stop());
  return apps;
}
