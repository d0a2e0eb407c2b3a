// Migrated databases to copy from, one per test process: a boot copies a template (an embedded database in well under
// a second, a Postgres database with CREATE DATABASE … TEMPLATE) instead of migrating every schema again.
import { PGlite } from "@electric-sql/pglite";
import { openEmbeddedPostgres, openServiceDatabase, type DatabaseSource } from "@hatch/platform";
import postgres from "postgres";
import { atEndOfRun, uniqueName } from "./servers.ts";

export interface SchemaMigrations {
  schema: string;
  migrations: string;
}

/** Every schema Hatch has: the services' and the gateway's (loaded when asked: a package's tests need only theirs). */
async function allSchemas(): Promise<SchemaMigrations[]> {
  const [{ SERVICES }, { GATEWAY_MIGRATIONS }] = await Promise.all([
    import("../../scripts/hatch.ts"),
    import("@hatch/gateway"),
  ]);
  return [
    ...Object.entries(SERVICES).map(([schema, { migrations }]) => ({ schema, migrations })),
    { schema: "gateway", migrations: GATEWAY_MIGRATIONS },
  ];
}

async function migrate(source: DatabaseSource, schemas: SchemaMigrations[]): Promise<void> {
  for (const { schema, migrations } of schemas) {
    const handle = await openServiceDatabase(source, { schema, migrationsFolder: migrations });
    await handle.close();
  }
}

const embedded = new Map<string, Promise<Blob>>();

/**
 * A new in-memory PGlite holding `schemas` migrated (default: all of Hatch's), copied from this process's template.
 * The caller closes it (startHatch does, given as `pglite`).
 */
export async function embeddedDatabase(schemas?: SchemaMigrations[]): Promise<PGlite> {
  const key = schemas?.map((s) => s.schema).join(",") ?? "all";
  let template = embedded.get(key);
  if (!template) {
    template = (async () => {
      const client = await openEmbeddedPostgres();
      await migrate({ kind: "pglite", client }, schemas ?? (await allSchemas()));
      const files = await client.dumpDataDir("none");
      await client.close();
      return files;
    })();
    template.catch(() => embedded.delete(key));
    embedded.set(key, template);
  }
  const copy = new PGlite({ loadDataDir: await template });
  await copy.waitReady;
  return copy;
}

const onServer = new Map<string, Promise<string>>();

/**
 * A fresh database on the test Postgres server holding every schema migrated, made from this process's template
 * database; `drop()` removes it. The template is dropped when the process's test files are done (atEndOfRun).
 */
export async function migratedDatabase(serverUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  let template = onServer.get(serverUrl);
  if (!template) {
    template = (async () => {
      const name = uniqueName("hatch_template");
      const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
      await admin.unsafe(`create database "${name}"`);
      await admin.end();
      await migrate({ kind: "postgres", url: withDatabase(serverUrl, name) }, await allSchemas());
      return name;
    })();
    template.catch(() => onServer.delete(serverUrl));
    onServer.set(serverUrl, template);
    atEndOfRun(dropTemplates);
  }
  const from = await template;
  const name = uniqueName("hatch");
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${name}" template "${from}"`);
  await admin.end();
  return {
    url: withDatabase(serverUrl, name),
    async drop() {
      const again = postgres(serverUrl, { max: 1, onnotice: () => {} });
      await again.unsafe(`drop database if exists "${name}" with (force)`);
      await again.end();
    },
  };
}

async function dropTemplates(): Promise<void> {
  for (const [serverUrl, template] of onServer) {
    const name = await template.catch(() => null);
    if (!name) continue;
    const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists "${name}" with (force)`).catch(() => {});
    await admin.end();
  }
  onServer.clear();
}

function withDatabase(serverUrl: string, name: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
