import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createNatsBus,
  deleteEventsStream,
  isDatabaseUnavailable,
  openServiceDatabase,
  type DatabaseHandle,
} from "@hatch/platform";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { eq, sql } from "drizzle-orm";
import postgres from "postgres";
import { startCluster, type Cluster } from "../scripts/cluster-lib.ts";
import { appsTable } from "../services/apps/src/db/schema.ts";
import { APPS_MIGRATIONS } from "../services/apps/src/service.ts";
import { eventually } from "./support/eventually.ts";
import { TEST_SECRET, type TestHatch } from "./support/hatch.ts";
import { callOk, connectFormClient } from "./support/mcp.ts";
import { hasPgBouncer, startPgBouncer, type PgBouncer } from "./support/pgbouncer.ts";
import { freePort, freshDatabase, realServers, testBlobDir, uniqueName } from "./support/servers.ts";

// Postgres behind Debian's PgBouncer in transaction mode (test/support/pgbouncer.ts), and each process's pool:
// DB_POOL_SIZE (the gateway's too), connections closed when idle, a statement timeout, a start-up line with the budget.

const ROOT = join(import.meta.dir, "..");
const ready = realServers && hasPgBouncer;
if (realServers && !hasPgBouncer)
  process.stderr.write("postgres-pooler.e2e: skipped: needs pgbouncer (apt-get install pgbouncer).\n");

/** Advisory locks held in `database` right now, by anyone (a migration lock left behind shows here). */
async function advisoryLocks(directUrl: string): Promise<number> {
  const client = postgres(directUrl, { max: 1, onnotice: () => {} });
  try {
    const [row] = await client<Array<{ n: number }>>`
      select count(*)::int as n from pg_locks
      where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())`;
    return row!.n;
  } finally {
    await client.end();
  }
}

describe.skipIf(!ready)("a service's database through PgBouncer in transaction mode", () => {
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let bouncer: PgBouncer;
  const handles: DatabaseHandle[] = [];
  const open = async () => {
    const handle = await openServiceDatabase(
      { kind: "postgres", url: bouncer.url, maxConnections: 4, pooler: "transaction" },
      { schema: "apps", migrationsFolder: APPS_MIGRATIONS },
    );
    handles.push(handle);
    return handle;
  };

  beforeAll(async () => {
    database = await freshDatabase(realServers!.databaseUrl);
    bouncer = await startPgBouncer(database.url);
    // Several server connections behind PgBouncer, as on a busy pooler: with round robin, one client's consecutive
    // transactions then run on different ones.
    const warm = postgres(bouncer.url, { max: 4, prepare: false, onnotice: () => {} });
    await Promise.all(Array.from({ length: 4 }, () => warm`select pg_sleep(0.2)`));
    await warm.end();
  }, 60_000);
  afterAll(async () => {
    for (const handle of handles) await handle.close().catch(() => {});
    await bouncer?.stop();
    await database?.drop();
  });

  test("copies starting at once migrate once, leave no lock behind, and a later start does not wait", async () => {
    await Promise.all([open(), open(), open()]);
    const migrations = readFileSync(join(APPS_MIGRATIONS, "meta/_journal.json"), "utf8");
    const applied = (await handles[0]!.db.execute(
      sql`select count(*)::int as n from apps.__drizzle_migrations`,
    )) as unknown as Array<{ n: number }>;
    expect(applied[0]!.n).toBe((JSON.parse(migrations) as { entries: unknown[] }).entries.length);
    expect(await advisoryLocks(database.url)).toBe(0);
    // A later start takes the same lock: it would wait forever on a session lock left on a pooled connection.
    await open();
    expect(await advisoryLocks(database.url)).toBe(0);
  }, 60_000);

  test("the same query many times: no named prepared statement that another server connection lacks", async () => {
    const { db } = handles[0] ?? (await open());
    for (let i = 0; i < 20; i++) {
      const found = await db
        .select({ id: appsTable.id })
        .from(appsTable)
        .where(eq(appsTable.address, `nothing-${i}`));
      expect(found).toEqual([]);
    }
  }, 60_000);
});

describe.skipIf(!ready)("the cluster through PgBouncer: pools, idle timeout, a new user's first calls", () => {
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let bouncer: PgBouncer;
  let cluster: Cluster;
  let logDir: string;
  let env: Record<string, string>;
  let client: Client;
  const busPrefix = uniqueName("pooler");
  const POOL = 3;

  beforeAll(async () => {
    database = await freshDatabase(realServers!.databaseUrl);
    bouncer = await startPgBouncer(database.url);
    logDir = mkdtempSync(join(tmpdir(), "hatch-pooler-logs-"));
    const port = freePort();
    const databaseEnv = {
      DATABASE_POOLER: "transaction",
      DATABASE_MIGRATION_URL: database.url,
      DB_POOL_SIZE: String(POOL),
      DB_IDLE_TIMEOUT_MS: "1000",
    };
    cluster = await startCluster({
      natsUrl: realServers!.natsUrl,
      databaseUrl: bouncer.url,
      secret: TEST_SECRET,
      busPrefix,
      port,
      appPort: freePort(),
      blobDir: testBlobDir(),
      logLevel: "info",
      logDir,
      env: databaseEnv,
    });
    env = {
      ...(process.env as Record<string, string>),
      ...databaseEnv,
      DATABASE_URL: bouncer.url,
      HATCH_SECRET: TEST_SECRET,
      PORT: String(port),
      LOG_LEVEL: "warn",
    };
  }, 90_000);
  afterAll(async () => {
    await client?.close();
    await cluster?.stop();
    const bus = await createNatsBus({ url: realServers!.natsUrl, prefix: busPrefix });
    await deleteEventsStream(bus).catch(() => {});
    await bus.drain();
    await bouncer?.stop();
    await database?.drop();
    if (logDir) rmSync(logDir, { recursive: true, force: true });
  }, 60_000);

  async function admin(...args: string[]): Promise<string> {
    const child = Bun.spawn(["bun", "run", "admin", ...args], { cwd: ROOT, env, stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
    if ((await child.exited) !== 0) throw new Error(`admin ${args[0]} failed:\n${stdout}\n${stderr}`);
    return stdout;
  }

  test("every process logs its connection budget at start, with DB_POOL_SIZE", () => {
    for (const name of ["gateway", "apps", "orgs", "domains", "billing"]) {
      const line = readFileSync(join(logDir, `${name}.log`), "utf8")
        .split("\n")
        .filter((l) => l.includes('"msg":"database connections"'))
        .map((l) => JSON.parse(l) as Record<string, unknown>)[0];
      expect(line).toMatchObject({ poolSize: POOL, idleTimeoutMs: 1000, pooler: "transaction" });
      expect(typeof line!.serverMaxConnections).toBe("number");
    }
  });

  test("a new user's first calls work, and each process keeps to DB_POOL_SIZE under load", async () => {
    await admin("user:create", "--email", "pooled@example.com", "--password", "long enough pw", "--name", "Pooled");
    const token = (await admin("token:issue", "--email", "pooled@example.com")).trim().split("\n").pop()!;
    ({ client } = await connectFormClient({ mcpUrl: `${cluster.baseUrl}/mcp` } as TestHatch, token, () => ({
      action: "accept",
      content: { name: "Pooled Page", visibility: "public" },
    })));
    // The first calls of a new user, each twice: a named prepared statement made on one server connection fails
    // on the next one PgBouncer hands out.
    for (let round = 0; round < 2; round++) {
      expect(await callOk(client, "whoami")).toMatchObject({ email: "pooled@example.com" });
      await callOk(client, "org");
      await callOk(client, "billing");
      await callOk(client, "list_tools");
      await callOk(client, "company_domain");
    }
    expect(
      await callOk(client, "publish", {
        files: [{ path: "index.html", content: "<!doctype html><title>Pooled</title><p>pooled", encoding: "utf8" }],
      }),
    ).toMatchObject({ status: "published", version: 1 });

    // Load from several calls at once; PgBouncer's SHOW CLIENTS counts each process's connections.
    const seen = new Map<string, number>();
    let loading = true;
    const sampler = (async () => {
      while (loading) {
        for (const [name, count] of await bouncer.clientsByApplication())
          seen.set(name, Math.max(seen.get(name) ?? 0, count));
        await Bun.sleep(10);
      }
    })();
    // Tool calls reach every service; token requests reach the gateway's own database (a refresh token is looked up).
    const refresh = () =>
      fetch(`${cluster.baseUrl}/oauth/token`, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: `grant_type=refresh_token&refresh_token=${crypto.randomUUID()}`,
      }).then((response) => expect(response.status).toBe(400));
    for (let wave = 0; wave < 3; wave++)
      await Promise.all([
        ...Array.from({ length: 20 }, (_, i) => callOk(client, ["whoami", "list_tools", "org", "billing"][i % 4]!)),
        ...Array.from({ length: 30 }, refresh),
      ]);
    loading = false;
    await sampler;
    for (const name of ["hatch-gateway", "hatch-apps", "hatch-orgs", "hatch-billing"]) {
      expect(seen.get(name) ?? 0).toBeGreaterThanOrEqual(1);
      expect(seen.get(name)!).toBeLessThanOrEqual(POOL);
    }
  }, 120_000);

  test("idle connections close (DB_IDLE_TIMEOUT_MS): the pools shrink after the load", async () => {
    // Each process still wakes now and then (the outbox relay polls every 2 s, the app host flushes its stats), so a
    // pool reopens one connection for a moment and closes it again a second later: each process is seen with none at
    // some point, not necessarily all at the same instant.
    const closed = new Set<string>();
    const names = ["hatch-gateway", "hatch-apps", "hatch-orgs", "hatch-billing"];
    await eventually(
      async () => {
        const clients = await bouncer.clientsByApplication();
        for (const name of names) if (!clients.get(name)) closed.add(name);
        return closed.size === names.length;
      },
      "every process's idle connections to close",
      30_000,
    );
  }, 60_000);

  test("migrations took no lock that outlived them, and a service started again comes up", async () => {
    expect(await advisoryLocks(database.url)).toBe(0);
    cluster.processes.get("apps")!.kill("SIGTERM");
    await cluster.processes.get("apps")!.exited;
    cluster.respawn("apps");
    await eventually(
      async () => {
        const health = await fetch(`${cluster.baseUrl}/healthz`)
          .then((r) => r.json() as Promise<{ services: Record<string, { ok: boolean }> }>)
          .catch(() => null);
        return health?.services.apps?.ok === true;
      },
      "the apps service to answer again",
      60_000,
    );
    expect(await callOk(client, "list_tools")).toBeDefined();
  }, 90_000);
});

describe.skipIf(!realServers)("a direct pool's statement timeout (DB_STATEMENT_TIMEOUT_MS)", () => {
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let handle: DatabaseHandle;

  beforeAll(async () => {
    database = await freshDatabase(realServers!.databaseUrl);
    handle = await openServiceDatabase(
      { kind: "postgres", url: database.url, maxConnections: 2, statementTimeoutMs: 300 },
      { schema: "apps", migrationsFolder: APPS_MIGRATIONS },
    );
  }, 60_000);
  afterAll(async () => {
    await handle?.close();
    await database?.drop();
  });

  test("Postgres cancels a statement past the timeout (57014): the database is unavailable for now", async () => {
    const [row] = (await handle.db.execute(sql`show statement_timeout`)) as unknown as Array<{
      statement_timeout: string;
    }>;
    expect(row!.statement_timeout).toBe("300ms");
    const error = await handle.db.execute(sql`select pg_sleep(30)`).then(
      () => null,
      (e: unknown) => e as { cause?: { code?: string } },
    );
    expect(error?.cause?.code).toBe("57014");
    // A call that meets it answers `unavailable` (try again), not `internal`.
    expect(isDatabaseUnavailable(error)).toBe(true);
  }, 60_000);
});
