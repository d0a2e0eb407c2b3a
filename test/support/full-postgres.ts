import postgres from "postgres";
import { uniqueName } from "./servers.ts";

/**
 * A Postgres that is full, for one test: a login role of its own with CONNECTION LIMIT `limit` and a fresh database
 * it owns, on the real server. While `fill()` holds the role's connections the server refuses every other one with
 * 53300 ("too many connections for role"), as a full server refuses with 53300 ("sorry, too many clients already");
 * `release()` gives them back. (A superuser has no limit, so the test's own connections stay free.)
 */
export interface FullPostgres {
  /** The database as the limited role: what a service under test connects with. */
  readonly url: string;
  /** The same database as the server's own (super)user, whose connections the limit does not count. */
  readonly adminUrl: string;
  fill(): Promise<void>;
  release(): Promise<void>;
  /** Releases, then drops the database and the role. */
  drop(): Promise<void>;
}

export async function fullPostgres(serverUrl: string, limit: number): Promise<FullPostgres> {
  const name = uniqueName("full");
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create role "${name}" login nosuperuser connection limit ${limit}`);
  await admin.unsafe(`create database "${name}" owner "${name}"`);
  const url = new URL(serverUrl);
  url.username = name;
  url.password = "";
  url.pathname = `/${name}`;
  const adminUrl = new URL(serverUrl);
  adminUrl.pathname = `/${name}`;
  let held: postgres.Sql[] = [];
  const release = async () => {
    await Promise.all(held.map((client) => client.end({ timeout: 1 })));
    held = [];
  };
  return {
    url: url.toString(),
    adminUrl: adminUrl.toString(),
    async fill() {
      // One client per connection, each kept open by a first query (postgres.js keeps idle connections).
      held = Array.from({ length: limit }, () => postgres(url.toString(), { max: 1, onnotice: () => {} }));
      await Promise.all(held.map((client) => client`select 1`));
    },
    release,
    async drop() {
      await release();
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.unsafe(`drop role if exists "${name}"`);
      await admin.end();
    },
  };
}
