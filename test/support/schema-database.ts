import { openServiceDatabase, type Database } from "@hatch/platform";
import { freshDatabase } from "./servers.ts";
import { embeddedDatabase } from "./templates.ts";

export interface SchemaDatabase {
  db: Database;
  close(): Promise<void>;
}

/**
 * A service schema, migrated from `migrationsFolder`, on a fresh database: a new database on `serverUrl`'s server
 * (dropped on close; at most `maxConnections`), or an in-memory PGlite copied from a migrated template when there is
 * no server.
 */
export async function openSchemaDatabase(options: {
  schema: string;
  migrationsFolder: string;
  serverUrl: string | undefined;
  maxConnections?: number;
}): Promise<SchemaDatabase> {
  const { schema, migrationsFolder, serverUrl, maxConnections } = options;
  if (!serverUrl) {
    const client = await embeddedDatabase([{ schema, migrations: migrationsFolder }]);
    const handle = await openServiceDatabase({ kind: "pglite", client }, { schema, migrationsFolder });
    return { db: handle.db, close: () => client.close() };
  }
  const database = await freshDatabase(serverUrl);
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
