import { PGlite } from "@electric-sql/pglite";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import { migrate as migratePostgres } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { noteDatabasePort } from "./db-errors.ts";

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
}

/** Opens the embedded database: a directory under the data dir, or in memory when `dir` is omitted. */
export async function openEmbeddedPostgres(dir?: string): Promise<PGlite> {
  const client = dir ? new PGlite(dir) : new PGlite();
  await client.waitReady;
  return client;
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
  // Several instances of a service may start at once; one applies the migrations, the others wait.
  const lock = await sql.reserve();
  try {
    await lock`select pg_advisory_lock(hashtext(${`hatch:migrate:${options.schema}`}))`;
    await migratePostgres(db, migrationConfig);
  } finally {
    await lock`select pg_advisory_unlock(hashtext(${`hatch:migrate:${options.schema}`}))`.catch(() => {});
    lock.release();
  }
  return { db: db as unknown as Database, kind: "postgres", close: () => sql.end({ timeout: 5 }) };
}
