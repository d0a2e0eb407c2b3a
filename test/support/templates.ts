// Migrated databases to copy from, one per test process: a boot copies a template (an embedded database in well under
// a second, a Postgres database with CREATE DATABASE … TEMPLATE) instead of migrating every schema again.
import { PGlite } from "@electric-sql/pglite";
import { openEmbeddedPostgres, openServiceDatabase, type DatabaseSource } from "@hatch/platform";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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

/** This process's migrated embedded template of `schemas` (default: all of Hatch's): PGlite's data dir as a tar. */
function embeddedTemplate(schemas?: SchemaMigrations[]): Promise<Blob> {
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
  return template;
}

/**
 * A new in-memory PGlite holding `schemas` migrated (default: all of Hatch's), copied from this process's template.
 * The caller closes it (startHatch does, given as `pglite`).
 */
export async function embeddedDatabase(schemas?: SchemaMigrations[]): Promise<PGlite> {
  const copy = new PGlite({ loadDataDir: await embeddedTemplate(schemas) });
  await copy.waitReady;
  return copy;
}

let dataDirTemplate: Promise<string> | undefined;

/**
 * Fills `dataDir` (DATA_DIR of `bun run dev` and `bun run admin`) with an embedded database holding every schema
 * migrated, as a data dir that dev has run on before: a file copy of this process's template folder. For tests whose
 * subject is not the first start, which spends seconds migrating (test/data-dir.test.ts and the conformance run
 * start from nothing).
 */
export async function migratedDataDir(dataDir: string): Promise<void> {
  if (!dataDirTemplate) {
    dataDirTemplate = (async () => {
      const folder = mkdtempSync(join(tmpdir(), "hatch-data-template-"));
      atEndOfRun(async () => rmSync(folder, { recursive: true, force: true }));
      const client = new PGlite(join(folder, "pg"), { loadDataDir: await embeddedTemplate() });
      await client.waitReady;
      await client.close();
      return join(folder, "pg");
    })();
    dataDirTemplate.catch(() => {
      dataDirTemplate = undefined;
    });
  }
  cpSync(await dataDirTemplate, join(dataDir, "pg"), { recursive: true });
}

const onServer = new Map<string, { serverUrl: string; name: Promise<string> }>();

/**
 * A fresh database on the test Postgres server holding `schemas` migrated (default: all of Hatch's), made from this
 * process's template database; `drop()` has the server remove it in the background. The run's end (atEndOfRun) waits
 * for those drops, then drops the template.
 */
export async function migratedDatabase(
  serverUrl: string,
  schemas?: SchemaMigrations[],
): Promise<{ url: string; drop(): Promise<void> }> {
  const key = `${serverUrl} ${schemas?.map((s) => s.schema).join(",") ?? "all"}`;
  let template = onServer.get(key)?.name;
  if (!template) {
    template = (async () => {
      const name = uniqueName("hatch_template");
      const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
      await admin.unsafe(`create database "${name}"`);
      await admin.end();
      await migrate({ kind: "postgres", url: withDatabase(serverUrl, name) }, schemas ?? (await allSchemas()));
      return name;
    })();
    template.catch(() => onServer.delete(key));
    onServer.set(key, { serverUrl, name: template });
    atEndOfRun(waitForDrops);
    atEndOfRun(dropTemplates);
  }
  const from = await template;
  const name = uniqueName("hatch");
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${name}" template "${from}"`);
  await admin.end();
  return {
    url: withDatabase(serverUrl, name),
    // The server drops it while the next test runs; the end of the run waits for every drop.
    async drop() {
      const dropping = (async () => {
        const again = postgres(serverUrl, { max: 1, onnotice: () => {} });
        await again.unsafe(`drop database if exists "${name}" with (force)`);
        await again.end();
      })();
      drops.add(dropping);
      void dropping.finally(() => drops.delete(dropping)).catch(() => {});
    },
  };
}

const drops = new Set<Promise<void>>();
async function waitForDrops(): Promise<void> {
  await Promise.allSettled([...drops]);
}

async function dropTemplates(): Promise<void> {
  for (const { serverUrl, name: template } of onServer.values()) {
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
