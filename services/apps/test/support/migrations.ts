import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openEmbeddedPostgres, openServiceDatabase, type Database } from "@hatch/platform";
import { expect } from "bun:test";
import { freshDatabase } from "../../../../test/support/servers.ts";
import { APPS_MIGRATIONS } from "../../src/service.ts";

export interface DatabaseBefore {
  /** The apps schema migrated up to, not including, the migration named. */
  old: Database;
  /** Every migration run on the same database (the one named and those after it). */
  upgrade(): Promise<Database>;
  /** Closes and removes everything made (the test's afterAll). */
  close(): Promise<void>;
}

/**
 * An apps database as it was before migration `tag` (e.g. `0009_document_usage`), for a test of what that migration
 * does to rows written before it: an embedded database, or a fresh one on TEST_DATABASE_URL's server.
 */
export async function appsDatabaseBefore(tag: string): Promise<DatabaseBefore> {
  const cleanup: (() => Promise<void> | void)[] = [];
  const before = mkdtempSync(join(tmpdir(), "hatch-migrations-"));
  cleanup.push(() => rmSync(before, { recursive: true, force: true }));
  cpSync(APPS_MIGRATIONS, before, { recursive: true });
  const journal = JSON.parse(readFileSync(join(before, "meta/_journal.json"), "utf8")) as {
    entries: { tag: string }[];
  };
  const at = journal.entries.findIndex((entry) => entry.tag === tag);
  expect(at).toBeGreaterThan(0);
  journal.entries = journal.entries.slice(0, at);
  writeFileSync(join(before, "meta/_journal.json"), JSON.stringify(journal));

  const serverUrl = process.env.TEST_DATABASE_URL;
  const pglite = serverUrl ? null : await openEmbeddedPostgres();
  const database = serverUrl ? await freshDatabase(serverUrl) : null;
  cleanup.push(async () => {
    await pglite?.close();
    await database?.drop();
  });
  const open = async (folder: string) => {
    const handle = await openServiceDatabase(
      pglite ? { kind: "pglite", client: pglite } : { kind: "postgres", url: database!.url },
      { schema: "apps", migrationsFolder: folder },
    );
    cleanup.push(() => handle.close());
    return handle.db;
  };
  return {
    old: await open(before),
    upgrade: () => open(APPS_MIGRATIONS),
    async close() {
      for (const step of cleanup.reverse()) await step();
    },
  };
}
