import { PGlite } from "@electric-sql/pglite";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import { readMigrationFiles } from "drizzle-orm/migrator";
import postgres from "postgres";
import { busyRefusal, noteDatabasePort } from "./db-errors.ts";
import type { Logger } from "./logger.ts";

/** Any drizzle Postgres database, whichever driver is behind it. Tables are qualified by their pgSchema. */
export type Database = PgDatabase<PgQueryResultHKT, Record<string, never>>;

/** Where a service's schema lives: a Postgres server, or the process's embedded PGlite. */
export type DatabaseSource =
  | ({ kind: "postgres"; url: string } & PostgresPoolSettings)
  | { kind: "pglite"; client: PGlite };

/** How a process uses a Postgres server (DB_POOL_SIZE, DB_IDLE_TIMEOUT_MS, ...: databaseSettingsFrom). */
export interface PostgresPoolSettings {
  /** Connections this process opens at most (DB_POOL_SIZE). Default 10. */
  maxConnections?: number;
  /** An idle connection is closed after this long, so a pool shrinks after a burst (DB_IDLE_TIMEOUT_MS). 0: never. */
  idleTimeoutMs?: number;
  /** Postgres cancels a statement running longer (DB_STATEMENT_TIMEOUT_MS). 0: no limit. Not sent through a pooler. */
  statementTimeoutMs?: number;
  /**
   * "transaction": the URL goes through a pooler in transaction mode (PgBouncer): no named prepared statements and no
   * session settings, since each transaction may run on another server connection (DATABASE_POOLER).
   */
  pooler?: "none" | "transaction";
  /** A direct connection for the migrations (DATABASE_MIGRATION_URL); default the URL itself. */
  migrationUrl?: string;
}

export const DEFAULT_POOL_SIZE = 10;
export const DEFAULT_IDLE_TIMEOUT_MS = 30_000;
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;

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
  /** Where the start-up line with the connection budget goes (a process that starts). */
  logger?: Logger;
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
  const pooled = source.pooler === "transaction";
  const poolSize = source.maxConnections ?? DEFAULT_POOL_SIZE;
  const idleTimeoutMs = source.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const statementTimeoutMs = source.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  const applicationName = options.applicationName ?? `hatch-${options.schema}`;
  const sql = postgres(source.url, {
    max: poolSize,
    // Closed when idle, so copies that had a burst give their connections back (postgres.js counts seconds).
    idle_timeout: idleTimeoutMs > 0 ? idleTimeoutMs / 1000 : undefined,
    // A Postgres that is restarting can hold a new connection for long: give up after 5 s (default 30 s), so a call
    // fails with a clear "try again" instead of hanging past its caller's patience (the reliability suite saw 15 s).
    connect_timeout: 5,
    // Through a pooler in transaction mode the next statement may run on another server connection, where a named
    // prepared statement does not exist: unnamed ones only.
    prepare: !pooled,
    onnotice: () => {},
    // Session settings go in the start-up message; a pooler in transaction mode refuses those it does not know.
    connection: {
      application_name: applicationName,
      ...(pooled || statementTimeoutMs <= 0 ? {} : { statement_timeout: statementTimeoutMs }),
    },
  });
  const db = drizzlePostgres({ client: sql });
  const migrations = readMigrationFiles({ migrationsFolder: options.migrationsFolder });
  const migrate = async () => {
    // Through DATABASE_MIGRATION_URL when given (a direct connection past the pooler), else the pool itself.
    const client = source.migrationUrl
      ? postgres(source.migrationUrl, {
          max: 1,
          connect_timeout: 5,
          prepare: false,
          onnotice: () => {},
          connection: { application_name: `${applicationName}-migrate` },
        })
      : sql;
    try {
      await applyMigrations(client, options.schema, migrations);
    } finally {
      if (client !== sql) await client.end({ timeout: 1 }).catch(() => {});
    }
  };
  try {
    await retryWhileBusy(migrate, options.waitWhileBusy);
    if (options.logger)
      await logConnectionBudget(sql, options.logger, {
        schema: options.schema,
        poolSize,
        idleTimeoutMs,
        statementTimeoutMs,
        pooled,
      });
  } catch (error) {
    await sql.end({ timeout: 1 }).catch(() => {});
    throw error;
  }
  return { db: db as unknown as Database, kind: "postgres", close: () => sql.end({ timeout: 5 }) };
}

/**
 * Applies the migrations not yet applied, as drizzle's migrator does (same `__drizzle_migrations` table in the
 * service's schema), but all in one transaction under a transaction-scoped advisory lock: copies that start at once
 * apply them one after the other, and nothing outlives the transaction. A session lock taken through a pooler in
 * transaction mode stays on whichever server connection ran it (its unlock may run on another) and hangs later starts.
 */
async function applyMigrations(
  client: postgres.Sql,
  schema: string,
  migrations: ReturnType<typeof readMigrationFiles>,
): Promise<void> {
  const table = `"${schema}"."__drizzle_migrations"`;
  await client.begin(async (tx) => {
    // Waiting for another copy's migrations, or a long one, is not a stuck statement.
    await tx`select set_config('statement_timeout', '0', true)`;
    await tx`select pg_advisory_xact_lock(hashtext(${`hatch:migrate:${schema}`}))`;
    await tx.unsafe(`create schema if not exists "${schema}"`);
    await tx.unsafe(
      `create table if not exists ${table} (id serial primary key, hash text not null, created_at bigint)`,
    );
    const [last] = await tx.unsafe<Array<{ created_at: string | number | null }>>(
      `select created_at from ${table} order by created_at desc limit 1`,
    );
    for (const migration of migrations) {
      if (last && Number(last.created_at) >= migration.folderMillis) continue;
      for (const statement of migration.sql) if (statement.trim()) await tx.unsafe(statement);
      await tx.unsafe(`insert into ${table} ("hash", "created_at") values ($1, $2)`, [
        migration.hash,
        migration.folderMillis,
      ]);
    }
  });
}

/**
 * The start-up line with the connection budget: this process's pool against what the server allows, so an operator
 * sees how many copies fit (each opens up to its pool size). Through a pooler the pooler's own limits apply instead.
 */
async function logConnectionBudget(
  sql: postgres.Sql,
  logger: Logger,
  pool: { schema: string; poolSize: number; idleTimeoutMs: number; statementTimeoutMs: number; pooled: boolean },
): Promise<void> {
  const fields = {
    schema: pool.schema,
    poolSize: pool.poolSize,
    idleTimeoutMs: pool.idleTimeoutMs,
    statementTimeoutMs: pool.pooled ? "set by the pooler or the role" : pool.statementTimeoutMs,
    pooler: pool.pooled ? "transaction" : "none",
  };
  try {
    const [row] = await sql<Array<{ max: number; reserved: number; used: number }>>`
      select current_setting('max_connections')::int as max,
             current_setting('superuser_reserved_connections')::int as reserved,
             (select count(*)::int from pg_stat_activity where backend_type = 'client backend') as used`;
    const available = row!.max - row!.reserved;
    logger.info("database connections", {
      ...fields,
      serverMaxConnections: available,
      serverInUse: row!.used,
      // Through a pooler, its own max_client_conn bounds this process's connections; the server sees its pool only.
      ...(pool.pooled ? {} : { copiesThatFit: Math.floor(available / pool.poolSize) }),
    });
  } catch {
    logger.info("database connections", fields);
  }
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
