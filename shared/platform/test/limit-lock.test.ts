import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { checkLimitLocked, type Database } from "@hatch/platform";
import { isToolError, limitsOf, type Entitlements } from "@hatch/contracts";
import { openSchemaDatabase } from "../../../test/support/schema-database.ts";

// checkLimitLocked on each database Hatch runs on: the embedded PGlite and, when TEST_DATABASE_URL is set, Postgres
// (a pool of connections, so transactions really run at once). Many transactions that each count and insert end with
// exactly the limit's rows.

const free: Entitlements = {
  accountId: "acct_1",
  plan: "free",
  state: "active",
  seats: 1,
  limits: limitsOf("free", "active", 1),
  settingsUrl: "http://localhost:3000/dashboard/billing",
};

const kinds = ["pglite", ...(process.env.TEST_DATABASE_URL ? ["postgres"] : [])] as const;

for (const kind of kinds) {
  describe(`checkLimitLocked (${kind})`, () => {
    let db: Database;
    let close: () => Promise<void>;

    beforeAll(async () => {
      ({ db, close } = await openSchemaDatabase({
        schema: "limittest",
        migrationsFolder: new URL("./fixtures/no-migrations", import.meta.url).pathname,
        serverUrl: kind === "postgres" ? process.env.TEST_DATABASE_URL : undefined,
        maxConnections: 8,
      }));
      await db.execute(sql`create table limittest.things (account text not null)`);
    });
    afterAll(async () => close?.());

    /** One change: count the account's things under its lock, then add one (slowly, so the others really wait). */
    const addThing = (account: string, entitlements: Entitlements | null) =>
      db.transaction(async (tx) => {
        await checkLimitLocked(tx, {
          entitlements,
          limit: "apps",
          accountId: account,
          used: async () =>
            countOf(await tx.execute(sql`select count(*)::int as n from limittest.things where account = ${account}`)),
        });
        await tx.execute(sql`select pg_sleep(0.02)`);
        await tx.execute(sql`insert into limittest.things (account) values (${account})`);
      });

    test("8 changes at once on the free plan's 3 apps: 3 are made, 5 refused with needs_payment", async () => {
      const outcomes = await Promise.allSettled(Array.from({ length: 8 }, () => addThing(`a-${kind}`, free)));
      const refused = outcomes.filter((o) => o.status === "rejected").map((o) => (o as PromiseRejectedResult).reason);
      expect(refused).toHaveLength(5);
      for (const error of refused) expect(isToolError(error) && error.code).toBe("needs_payment");
      const made = await db.execute(
        sql`select count(*)::int as n from limittest.things where account = ${`a-${kind}`}`,
      );
      expect(countOf(made)).toBe(3);
    });

    test("the lock is an advisory lock held until the transaction ends", async () => {
      const advisory = sql`select count(*)::int as n from pg_locks where locktype = 'advisory' and pid = pg_backend_pid()`;
      await db.transaction(async (tx) => {
        await checkLimitLocked(tx, { entitlements: free, limit: "apps", accountId: "held", used: async () => 0 });
        expect(countOf(await tx.execute(advisory))).toBe(1);
      });
      expect(countOf(await db.execute(advisory))).toBe(0);
    });

    test("another account is not held up or counted; no limit (or billing unknown) neither locks nor counts", async () => {
      await Promise.all([addThing(`b-${kind}`, free), addThing(`c-${kind}`, free)]);
      let counted = false;
      await db.transaction(async (tx) => {
        await checkLimitLocked(tx, {
          entitlements: null,
          limit: "apps",
          accountId: "x",
          used: async () => ((counted = true), 0),
        });
        const held = await tx.execute(
          sql`select count(*)::int as n from pg_locks where locktype = 'advisory' and pid = pg_backend_pid()`,
        );
        expect(countOf(held)).toBe(0);
      });
      expect(counted).toBe(false);
    });
  });
}

/** The `n` of a one-row count, whichever driver answered (postgres.js: rows; PGlite: { rows }). */
function countOf(result: unknown): number {
  const rows = Array.isArray(result) ? result : (result as { rows: { n: number }[] }).rows;
  return (rows[0] as { n: number }).n;
}
