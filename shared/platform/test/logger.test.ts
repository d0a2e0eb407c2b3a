import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { createLogger, openEmbeddedPostgres, type Database } from "@hatch/platform";

// A failed query must never put its parameters (a password hash, an email, a token) in a log line: drizzle's
// DrizzleQueryError repeats them in its message, the drivers keep them on the error, Postgres quotes them.

const SECRET = "$argon2id$v=19$m=65536,t=2,p=1$c2VjcmV0LXNhbHQ$SECRET-HASH-VALUE";

interface Driver {
  name: string;
  db: Database;
  close(): Promise<void>;
}

const drivers: Driver[] = [];
beforeAll(async () => {
  const client = await openEmbeddedPostgres();
  drivers.push({ name: "pglite", db: drizzlePglite({ client }) as unknown as Database, close: () => client.close() });
  if (process.env.TEST_DATABASE_URL) {
    const client = postgres(process.env.TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
    drivers.push({
      name: "postgres",
      db: drizzlePostgres({ client }) as unknown as Database,
      close: () => client.end({ timeout: 5 }),
    });
  }
}, 60_000);
afterAll(async () => {
  for (const driver of drivers) await driver.close();
});

async function loggedFailure(run: () => Promise<unknown>): Promise<{ line: string; parsed: Record<string, unknown> }> {
  const lines: string[] = [];
  const logger = createLogger({ write: (line) => lines.push(line) });
  try {
    await run();
    throw new Error("the query was expected to fail");
  } catch (error) {
    logger.error("request failed", { error, wrapped: new Error("sign-up failed", { cause: error }) });
  }
  const line = lines[0] ?? "";
  return { line, parsed: JSON.parse(line) as Record<string, unknown> };
}

describe("errors from the database are logged without the query's parameters", () => {
  test("a value Postgres refuses (quoted back in its message) on every driver", async () => {
    expect(drivers.length).toBeGreaterThan(0);
    for (const { db } of drivers) {
      const { line, parsed } = await loggedFailure(() => db.execute(sql`select ${SECRET}::int`));
      expect(line).not.toContain("SECRET-HASH-VALUE");
      expect(line).not.toContain("argon2id");
      const error = parsed.error as { message: string; cause?: { code?: string; message: string } };
      expect(error.message).toBe("database query failed");
      expect(error.cause?.code).toBe("22P02");
      expect(error.cause?.message).toBe("invalid input syntax for type integer");
      expect((parsed.wrapped as { cause?: { message: string } }).cause?.message).toBe("database query failed");
    }
  });

  test("a unique violation (the value is in the detail) keeps its code and constraint, not the value", async () => {
    for (const { name, db } of drivers) {
      const table = sql.raw(`log_test_${name}_${process.pid}`);
      await db.execute(
        sql`create temporary table ${table} (email text constraint ${sql.raw(`log_test_${name}_email_key`)} unique)`,
      );
      await db.execute(sql`insert into ${table} (email) values (${SECRET})`);
      const { line, parsed } = await loggedFailure(() =>
        db.execute(sql`insert into ${table} (email) values (${SECRET})`),
      );
      expect(line).not.toContain("SECRET-HASH-VALUE");
      const cause = (parsed.error as { cause?: { code?: string; constraint?: string } }).cause;
      expect(cause?.code).toBe("23505");
      expect(cause?.constraint).toBe(`log_test_${name}_email_key`);
    }
  });

  test("other errors keep their message and stack", async () => {
    const lines: string[] = [];
    createLogger({ write: (line) => lines.push(line) }).error("boom", { error: new TypeError("x is not a function") });
    const error = (JSON.parse(lines[0] ?? "{}") as { error: { name: string; message: string; stack: string } }).error;
    expect(error).toMatchObject({ name: "TypeError", message: "x is not a function" });
    expect(error.stack).toContain("x is not a function");
  });
});
