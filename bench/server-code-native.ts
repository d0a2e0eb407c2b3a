// The server-code bench's (n): Bun.serve calling the same module's fetch natively, with a native env whose
// db(name).list runs the list query with postgres.js (same pool size as the apps service) and answers the same
// shape. No sandbox, no Host routing, no viewer, no rules, no limits.
import postgres from "postgres";
import { join } from "node:path";
import { MARKER } from "./children.ts";

type Handler = { fetch(request: Request, env: unknown): Response | Promise<Response> };
const handler = ((await import(join(import.meta.dir, "server-code-handler.js"))) as { default: Handler }).default;

const port = Number(process.env.PORT);
const { DATABASE_URL: url, BENCH_APP_ID: appId, BENCH_PATH: path } = process.env;
if (!Number.isInteger(port) || port <= 0 || !url || !appId || !path) {
  process.stderr.write("server-code-native: PORT, DATABASE_URL, BENCH_APP_ID and BENCH_PATH are required\n");
  process.exit(2);
}

const sql = postgres(url, { max: 10, onnotice: () => {} });
const env = {
  viewer: null,
  db: (collection: string) => ({
    async list(options: { limit?: number } = {}) {
      const rows = await sql`select id, data, created_at, updated_at, created_by_email from apps.documents where app_id = ${appId} and collection = ${collection} order by created_at, id limit ${options.limit ?? 20}`;
      return { documents: rows.map((row) => ({ id: row.id, createdAt: row.created_at, updatedAt: row.updated_at, createdBy: row.created_by_email, ...row.data })), next: null };
    },
  }),
};

const server = Bun.serve({ port, hostname: "127.0.0.1", fetch: (request) => handler.fetch(request, env) });
process.stdout.write(`${MARKER}READY ${JSON.stringify({ url: `http://127.0.0.1:${server.port}${path}`, host: `127.0.0.1:${server.port}` })}\n`);

const stop = async () => {
  await server.stop(true);
  await sql.end();
  process.exit(0);
};
process.once("SIGTERM", () => void stop());
process.once("SIGINT", () => void stop());
