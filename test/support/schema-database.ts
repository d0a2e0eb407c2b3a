import { openServiceDatabase, type Database } from "@hatch/platform";
import { embeddedDatabase, migratedDatabase } from "./templates.ts";

export interface SchemaDatabase {
  db: Database;
  close(): Promise<void>;
}

/**
 * A service schema, migrated from `migrationsFolder`, on a fresh database copied from a migrated template of this
 * process: a new database on `serverUrl`'s server (dropped on close; at most `maxConnections`), or an in-memory PGlite
 * when there is no server.
 */
export async function openSchemaDatabase(options: {
  schema: string;
  migrationsFolder: string;
  serverUrl: string | undefined;
  maxConnections?: number;
}): Promise<SchemaDatabase> {
  const { schema, migrationsFolder, serverUrl, maxConnections } = options;
  const schemas = [{ schema, migrations: migrationsFolder }];
  if (!serverUrl) {
    const client = await embeddedDatabase(schemas);
    const handle = await openServiceDatabase({ kind: "pglite", client }, { schema, migrationsFolder });
    return { db: handle.db, close: () => client.close() };
  }
  const database = await migratedDatabase(serverUrl, schemas);
  const handle = await openServiceDatabase(
    { kind: "postgres", url: database.url, ...(maxConnections ? { maxConnections } : {}) },
    { schema, migrationsFolder },
  );
  return {
    db: handle.db,
    async close() {
      await handle.close();
      await database.drop();
    },
  };
}
