// What the bench's bare baselines share (data-baseline-server.ts, server-code-native.ts): their settings from the
// environment, postgres.js with the apps service's pool size, the list query the app host runs, READY and a clean stop.
import postgres from "postgres";
import { MARKER } from "./children.ts";

export type Sql = ReturnType<typeof postgres>;

/** PORT, DATABASE_URL and the named settings, or exits 2 naming what is missing. */
export function baselineSettings<K extends string>(
  script: string,
  keys: readonly K[],
): { port: number; sql: Sql } & Record<K, string> {
  const port = Number(process.env.PORT);
  const url = process.env.DATABASE_URL;
  const missing = keys.filter((key) => !process.env[key]);
  if (!Number.isInteger(port) || port <= 0 || !url || missing.length > 0) {
    process.stderr.write(`${script}: PORT, DATABASE_URL and ${keys.join(", ")} are required\n`);
    process.exit(2);
  }
  const values = Object.fromEntries(keys.map((key) => [key, process.env[key]!])) as Record<K, string>;
  return { port, sql: postgres(url, { max: 10, onnotice: () => {} }), ...values };
}

/** The first `limit` documents of a collection, oldest first, in the browser library's shape (the app host's list query). */
export async function listDocuments(sql: Sql, appId: string, collection: string, limit: number) {
  const rows =
    await sql`select id, data, created_at, updated_at, created_by_email from apps.documents where app_id = ${appId} and collection = ${collection} order by created_at, id limit ${limit}`;
  return rows.map((row) => ({
    id: row.id,
    ...row.data,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    createdBy: row.created_by_email,
  }));
}

/** Tells the bench where to send load (`path` on this server), and stops cleanly on SIGTERM / SIGINT. */
export function announce(server: ReturnType<typeof Bun.serve>, sql: Sql, path: string): void {
  process.stdout.write(
    `${MARKER}READY ${JSON.stringify({ url: `http://127.0.0.1:${server.port}${path}`, host: `127.0.0.1:${server.port}` })}\n`,
  );
  const stop = async () => {
    await server.stop(true);
    await sql.end();
    process.exit(0);
  };
  process.once("SIGTERM", () => void stop());
  process.once("SIGINT", () => void stop());
}
