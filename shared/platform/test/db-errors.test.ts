import { afterAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import { createServer } from "node:net";
import postgres from "postgres";
import { databaseUnavailableMessage, isDatabaseBusy, isDatabaseUnavailable } from "../src/db-errors.ts";
import { fullPostgres } from "../../../test/support/full-postgres.ts";

// The errors are real ones: postgres.js through drizzle against a port where nothing listens, and (with
// TEST_DATABASE_URL) a wrong query on a real server, which is a bug and must stay one.

const closedPort = await new Promise<number>((resolve) => {
  const probe = createServer().listen(0, "127.0.0.1", () => {
    const { port } = probe.address() as { port: number };
    probe.close(() => resolve(port));
  });
});

async function failureOf(url: string, query = sql`select 1`): Promise<unknown> {
  const client = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
  try {
    await drizzle({ client }).execute(query);
    return null;
  } catch (error) {
    return error;
  } finally {
    await client.end({ timeout: 1 });
  }
}

describe("isDatabaseUnavailable", () => {
  const clients: postgres.Sql[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end({ timeout: 1 })));
  });

  test("a query to a database that does not answer is unavailable, not a bug", async () => {
    const error = await failureOf(`postgres://postgres@127.0.0.1:${closedPort}/none`);
    expect(error).not.toBeNull();
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  test.skipIf(!process.env.TEST_DATABASE_URL)("a wrong query on a database that answers is not", async () => {
    const error = await failureOf(process.env.TEST_DATABASE_URL!, sql`select * from no_such_table_anywhere`);
    expect((error as { cause?: { code?: string } }).cause?.code).toBe("42P01");
    expect(isDatabaseUnavailable(error)).toBe(false);
  });

  test.skipIf(!process.env.TEST_DATABASE_URL)(
    "a query to a database with no free connection (53300) is unavailable, and busy: worth waiting for",
    async () => {
      const full = await fullPostgres(process.env.TEST_DATABASE_URL!, 1);
      try {
        await full.fill();
        const error = await failureOf(full.url);
        expect((error as { cause?: { code?: string } }).cause?.code).toBe("53300");
        expect(isDatabaseUnavailable(error)).toBe(true);
        expect(isDatabaseBusy(error)).toBe(true);
      } finally {
        await full.drop();
      }
    },
  );

  test("insufficient resources (class 53) and 'starting up' (57P03) are busy; a closed port or a bug is not", async () => {
    for (const code of ["53000", "53100", "53200", "53300", "53400", "57P03"]) {
      const error = Object.assign(new Error("server says no"), { name: "PostgresError", code });
      expect(isDatabaseUnavailable(error)).toBe(true);
      expect(isDatabaseBusy(error)).toBe(true);
    }
    expect(isDatabaseBusy(await failureOf(`postgres://postgres@127.0.0.1:${closedPort}/none`))).toBe(false);
    expect(isDatabaseBusy(Object.assign(new Error("bad"), { name: "PostgresError", code: "42P01" }))).toBe(false);
    expect(isDatabaseBusy(Object.assign(new Error("bad"), { code: "57P01" }))).toBe(false);
  });

  test("socket errors count only inside a failed query; Postgres's own shutdown codes always", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED" });
    expect(isDatabaseUnavailable(refused)).toBe(false);
    expect(isDatabaseUnavailable(Object.assign(new Error("shutting down"), { code: "57P01" }))).toBe(true);
    expect(isDatabaseUnavailable(new Error("boom"))).toBe(false);
    expect(isDatabaseUnavailable(null)).toBe(false);
  });

  test("the message says whether the call may have changed something", () => {
    expect(databaseUnavailableMessage(true)).toContain("may not have taken effect. Check, then try again");
    expect(databaseUnavailableMessage(false)).toEndWith("Try again in a moment.");
  });
});
