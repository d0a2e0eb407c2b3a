import { PGlite } from "@electric-sql/pglite";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import { migrate as migratePostgres } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { busyRefusal, noteDatabasePort } from "./db-errors.ts";
import type { Logger } from "./logger.ts";

/** Any drizzle Postgres database, whichever driver is behind it. Tables are qualified by their pgSchema. */
export type Database = PgDatabase<PgQueryResultHKT, Record<string, never>>;

/** Where a service's schema lives: a Postgres server, or the process's embedded PGlite. */
export type DatabaseSource =
  | { kind: "postgres"; url: string; maxConnections?: number }
  | { kind: "pglite"; client: PGlite };

export interface DatabaseHandle {
  readonly db: Database;
  readonly kind: DatabaseSource["kind"];
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** The service's Postgres schema; its migrations table lives there too. */
  schema: string;
  /** The drizzle-kit output folder of the service. */
  migrationsFolder: string;
  applicationName?: string;
  /**
   * A process that starts: while Postgres refuses for now (no free connection, starting up), wait and try again, with a
   * line in this log each time, instead of failing. Other failures (a refused port, a wrong password) still throw.
   */
  waitWhileBusy?: Logger;
}

/** The waits between tries while Postgres is busy at start: doubling from 0.5 s up to 10 s. */
const BUSY_RETRY_FIRST_MS = 500;
const BUSY_RETRY_MAX_MS = 10_000;

/**
 * Opens the embedded database: a directory under the data dir, or in memory when `dir` is omitted. A new one starts
 * from a copy of initdb's output (initdbImage), not from initdb itself: in WebAssembly that takes seconds.
 */
export async function openEmbeddedPostgres(dir?: string): Promise<PGlite> {
  const fresh = !dir || !existsSync(dir) || readdirSync(dir).length === 0;
  const image = fresh ? await initdbImage() : null;
  if (image) {
    try {
      return await ready(dir ? new PGlite(dir, { loadDataDir: image }) : new PGlite({ loadDataDir: image }));
    } catch {
      // A copy that does not load (damaged): drop it and start over with initdb, in a folder that was empty before.
      imageInProcess = undefined;
      const path = initdbImagePath();
      if (path) rmSync(path, { force: true });
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
  }
  return ready(dir ? new PGlite(dir) : new PGlite());
}

async function ready(client: PGlite): Promise<PGlite> {
  await client.waitReady;
  return client;
}

/**
 * The files initdb makes (an empty cluster, no schema of ours), kept once per PGlite version under the installed
 * packages (node_modules/.cache/hatch), so every later new database loads them in well under a second. Null when
 * PGlite cannot say where it is installed; a folder that cannot be written only means the copy is made again.
 */
let imageInProcess: Promise<Blob | null> | undefined;
function initdbImage(): Promise<Blob | null> {
  imageInProcess ??= (async () => {
    const path = initdbImagePath();
    if (!path) return null;
    if (existsSync(path)) return new Blob([readFileSync(path)]);
    const scratch = new PGlite();
    await scratch.waitReady;
    const image = new Blob([await (await scratch.dumpDataDir("none")).arrayBuffer()]);
    await scratch.close();
    try {
      mkdirSync(dirname(path), { recursive: true });
      // Whole or not at all: another process may be reading or writing the same copy.
      const partial = `${path}.${process.pid}.tmp`;
      writeFileSync(partial, new Uint8Array(await image.arrayBuffer()));
      renameSync(partial, path);
    } catch {
      // Read-only install: every new database runs initdb's output through here again.
    }
    return image;
  })();
  return imageInProcess;
}

function initdbImagePath(): string | null {
  try {
    const dist = dirname(fileURLToPath(import.meta.resolve("@electric-sql/pglite")));
    const { version } = JSON.parse(readFileSync(join(dist, "..", "package.json"), "utf8")) as { version: string };
    return join(dist, "..", "..", "..", ".cache", "hatch", `pglite-${version}-initdb.tar`);
  } catch {
    return null;
  }
}

/** Opens a service's database and applies its migrations before returning. */
export async function openServiceDatabase(
  source: DatabaseSource,
  options: OpenDatabaseOptions,
): Promise<DatabaseHandle> {
  const migrationConfig = {
    migrationsFolder: options.migrationsFolder,
    migrationsSchema: options.schema,
    migrationsTable: "__drizzle_migrations",
  };
  if (source.kind === "pglite") {
    const db = drizzlePglite({ client: source.client });
    await migratePglite(db, migrationConfig);
    // The embedded client is shared by every service in the process; its owner closes it.
    return { db: db as unknown as Database, kind: "pglite", close: async () => {} };
  }
  noteDatabasePort(Number(new URL(source.url).port || 5432));
  const sql = postgres(source.url, {
    max: source.maxConnections ?? 10,
    // A Postgres that is restarting can hold a new connection for long: give up after 5 s (default 30 s), so a call
    // fails with a clear "try again" instead of hanging past its caller's patience (the reliability suite saw 15 s).
    connect_timeout: 5,
    onnotice: () => {},
    connection: { application_name: options.applicationName ?? `hatch-${options.schema}` },
  });
  const db = drizzlePostgres({ client: sql });
  const migrate = async () => {
    // Several instances of a service may start at once; one applies the migrations, the others wait.
    const lock = await sql.reserve();
    try {
      await lock`select pg_advisory_lock(hashtext(${`hatch:migrate:${options.schema}`}))`;
      await migratePostgres(db, migrationConfig);
    } finally {
      await lock`select pg_advisory_unlock(hashtext(${`hatch:migrate:${options.schema}`}))`.catch(() => {});
      lock.release();
    }
  };
  try {
    await retryWhileBusy(migrate, options.waitWhileBusy);
  } catch (error) {
    await sql.end({ timeout: 1 }).catch(() => {});
    throw error;
  }
  return { db: db as unknown as Database, kind: "postgres", close: () => sql.end({ timeout: 5 }) };
}

/** Runs `attempt`; while it fails because Postgres is busy and `log` is given, waits (logged) and runs it again. */
async function retryWhileBusy(attempt: () => Promise<void>, log: Logger | undefined): Promise<void> {
  let waitMs = BUSY_RETRY_FIRST_MS;
  const since = Date.now();
  for (let tries = 1; ; tries++) {
    try {
      await attempt();
      if (tries > 1)
        log?.info("database ready after waiting", { tries, waitedSeconds: Math.round((Date.now() - since) / 1000) });
      return;
    } catch (error) {
      const busy = busyRefusal(error);
      if (!log || !busy) throw error;
      log.warn("waiting for the database", { ...busy, tries, retryInSeconds: waitMs / 1000 });
      await Bun.sleep(waitMs);
      waitMs = Math.min(waitMs * 2, BUSY_RETRY_MAX_MS);
    }
  }
}
