import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import {
  bindTool,
  createLogger,
  createNatsBus,
  deleteEventsStream,
  deriveKey,
  list_tools,
  rollback,
  startService,
  TOOL_CONTRACTS,
  type RunningService,
} from "@hatch/shared";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { fullPostgres, type FullPostgres } from "./support/full-postgres.ts";
import { startTestHatch, TEST_SECRET, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { collect, isAlive, logLines } from "./support/processes.ts";
import { realServers, uniqueName } from "./support/servers.ts";

const ROOT = join(import.meta.dir, "..");
const databaseUrl = process.env.TEST_DATABASE_URL;

// Postgres with no free connection (53300) is the database not answering for now, not a bug: a tool call says so in
// plain words, and a service that starts meanwhile waits for a connection instead of crashing. The server is the real
// one at TEST_DATABASE_URL, made full for a role of the test's own (CONNECTION LIMIT, every connection held).

describe.skipIf(!databaseUrl)("a tool call while Postgres has no free connection (real Postgres)", () => {
  let hatch: TestHatch;
  let full: FullPostgres;
  let apps: RunningService;
  let client: postgres.Sql;

  beforeAll(async () => {
    full = await fullPostgres(databaseUrl!, 1);
    hatch = await startTestHatch("embedded", { services: ["orgs"] });
    // A stand-in apps service on the full server: its first query needs a connection the server refuses.
    client = postgres(full.url, { max: 1, connect_timeout: 5, onnotice: () => {} });
    const db = drizzle({ client });
    apps = await startService({
      name: "apps",
      version: "test",
      bus: hatch.bus,
      contextKey: deriveKey(TEST_SECRET, "ctx"),
      contracts: TOOL_CONTRACTS,
      logger: createLogger({ level: "silent" }),
      tools: [
        bindTool(list_tools, async () => {
          await db.execute(sql`select 1`);
          return { text: "No apps yet.", data: { apps: [] } };
        }),
        bindTool(rollback, async () => {
          await db.execute(sql`select 1`);
          throw new Error("unreachable");
        }),
      ],
    });
    await full.fill();
  }, 60_000);
  afterAll(async () => {
    await apps?.stop();
    await client?.end({ timeout: 1 });
    await hatch?.stop();
    await full?.drop();
  });

  test("the tool says the database is not answering and to try again, then works once connections are free", async () => {
    const ai = await connectClient(hatch, (await userWithToken(hatch, { name: "Fay Full" })).accessToken);
    const read = await ai.callTool({ name: "list_tools", arguments: {} });
    expect(read.isError).toBe(true);
    expect(textOf(read)).toBe(
      "Hatch's database is not answering right now (it may be restarting). Try again in a moment. (unavailable)",
    );
    const change = await ai.callTool({ name: "rollback", arguments: { address: "some-app", version: 1 } });
    expect(textOf(change)).toBe(
      "Hatch's database is not answering right now (it may be restarting), so this may not have taken effect. Check, then try again in a moment. (unavailable)",
    );

    await full.release();
    expect(await callOk(ai, "list_tools")).toEqual({ apps: [] });
    await ai.close();
  }, 30_000);
});

describe.skipIf(!realServers)("a service that starts while Postgres has no free connection (real)", () => {
  let full: FullPostgres;
  const busPrefix = uniqueName("full");

  beforeAll(async () => {
    full = await fullPostgres(realServers!.databaseUrl, 5);
  }, 30_000);
  afterAll(async () => {
    await full?.drop();
    const bus = await createNatsBus({ url: realServers!.natsUrl, prefix: busPrefix });
    await deleteEventsStream(bus);
    await bus.drain();
  });

  test("orgs (bun run start) waits with a log line, then starts once connections free up", async () => {
    await full.fill();
    const child = Bun.spawn(["bun", "src/main.ts"], {
      cwd: join(ROOT, "services/orgs"),
      env: {
        PATH: process.env.PATH ?? "",
        NATS_URL: realServers!.natsUrl,
        DATABASE_URL: full.url,
        BUS_PREFIX: busPrefix,
        HATCH_SECRET: TEST_SECRET,
        LOG_LEVEL: "info",
        NODE_ENV: "test",
        DB_POOL_SIZE: "4",
      },
      stdout: "pipe",
      stderr: "pipe",
    });
    const stdout = collect(child.stdout);
    const stderr = collect(child.stderr);
    try {
      await stdout.waitFor('"msg":"waiting for the database"').catch((error) => {
        throw new Error(`${error}\nstderr:\n${stderr.text}`);
      });
      const [waiting] = logLines(stdout, "waiting for the database");
      expect(waiting).toMatchObject({ level: "warn", service: "orgs", code: "53300" });
      expect(String(waiting!.reason)).toContain("too many connections");
      expect(isAlive(child.pid)).toBe(true);
      expect(logLines(stdout, "service ready")).toEqual([]);

      await full.release();
      await stdout.waitFor('"msg":"service ready"');
      // It applied its migrations on the database it waited for.
      const admin = postgres(full.adminUrl, { max: 1, onnotice: () => {} });
      const [applied] = await admin<{ n: number }[]>`select count(*)::int as n from orgs.__drizzle_migrations`;
      await admin.end();
      expect(applied?.n).toBeGreaterThan(0);
    } finally {
      child.kill("SIGTERM");
      await child.exited;
    }
  }, 60_000);
});
