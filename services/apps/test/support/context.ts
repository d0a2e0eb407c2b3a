import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger, createMemoryBus } from "@hatch/platform";
import { createDiskBlobStore } from "../../src/blobs/disk.ts";
import { loadAppsConfig } from "../../src/config.ts";
import { appsKeys, appsRateCounter, createSealer, type AppsContext } from "../../src/context.ts";
import { AppLogWriter } from "../../src/app-logs.ts";
import { APPS_MIGRATIONS } from "../../src/service.ts";
import { openSchemaDatabase } from "../../../../test/support/schema-database.ts";

export const TEST_SECRET = "apps-test-secret-".padEnd(48, "x");

export interface TestContext {
  ctx: AppsContext;
  close(): Promise<void>;
}

/**
 * An apps context on a fresh, migrated database (a copy of a migrated template: a new database on TEST_DATABASE_URL's
 * server when set, else an in-memory PGlite), a temporary blob folder and the in-process bus. `gatewayUrl` is where sign-in redirects point;
 * `logWrite` captures the log lines (info and up).
 */
export async function openTestContext(
  options: { gatewayUrl?: string; env?: Record<string, string>; logWrite?: (line: string) => void } = {},
): Promise<TestContext> {
  const blobDir = mkdtempSync(join(tmpdir(), "hatch-apps-test-"));
  const database = await openSchemaDatabase({
    schema: "apps",
    migrationsFolder: APPS_MIGRATIONS,
    serverUrl: process.env.TEST_DATABASE_URL,
  });
  const logger = options.logWrite
    ? createLogger({ level: "info", write: options.logWrite })
    : createLogger({ level: (process.env.LOG_LEVEL as "warn") ?? "warn" });
  const config = loadAppsConfig({
    APP_PORT: "0",
    BLOB_DIR: blobDir,
    BASE_URL: options.gatewayUrl ?? "http://localhost:39999",
    ...options.env,
  });
  const bus = createMemoryBus({ logger });
  const ctx: AppsContext = {
    db: database.db,
    config,
    blobs: createDiskBlobStore(blobDir),
    keys: appsKeys(TEST_SECRET),
    sealer: createSealer(config, TEST_SECRET),
    logger,
    bus,
    rate: appsRateCounter(bus),
    appLogs: new AppLogWriter(database.db, logger),
  };
  return {
    ctx,
    async close() {
      await ctx.appLogs.stop();
      await bus.drain();
      await database.close();
      rmSync(blobDir, { recursive: true, force: true });
    },
  };
}
