// The baseline of the data bench: Bun.serve and postgres.js doing only the query behind the same answer, with the
// same pool size as the apps service: GET → the first 20 documents of the collection (the list query's shape, on
// the same index), POST → one insert. No routing by Host, no viewer, no rules, no limits, no counters.
import postgres from "postgres";
import { randomBytes } from "node:crypto";
import { MARKER } from "./children.ts";

const port = Number(process.env.PORT);
const { DATABASE_URL: url, BENCH_APP_ID: appId, BENCH_COLLECTION: collection } = process.env;
if (!Number.isInteger(port) || port <= 0 || !url || !appId || !collection) {
  process.stderr.write("data-baseline-server: PORT, DATABASE_URL, BENCH_APP_ID and BENCH_COLLECTION are required\n");
  process.exit(2);
}

const sql = postgres(url, { max: 10, onnotice: () => {} });
const headers = { "Content-Type": "application/json; charset=utf-8" };

const server = Bun.serve({
  port,
  hostname: "127.0.0.1",
  async fetch(request) {
    if (request.method === "POST") {
      const data = (await request.json()) as Record<string, unknown>;
      const id = randomBytes(12).toString("base64url");
      const [row] = await sql`insert into apps.documents (app_id, collection, id, data, bytes) values (${appId}, ${collection}, ${id}, ${sql.json(data as never)}, ${JSON.stringify(data).length}) returning id, data, created_at, updated_at`;
      return new Response(JSON.stringify({ id: row!.id, ...row!.data, createdAt: row!.created_at, updatedAt: row!.updated_at, createdBy: null }), { status: 201, headers });
    }
    const rows = await sql`select id, data, created_at, updated_at, created_by_email from apps.documents where app_id = ${appId} and collection = ${collection} order by created_at, id limit 20`;
    const documents = rows.map((row) => ({ id: row.id, ...row.data, createdAt: row.created_at, updatedAt: row.updated_at, createdBy: row.created_by_email }));
    return new Response(JSON.stringify({ documents, next: null }), { headers });
  },
});
process.stdout.write(`${MARKER}READY ${JSON.stringify({ url: `http://127.0.0.1:${server.port}/`, host: `127.0.0.1:${server.port}` })}\n`);

const stop = async () => {
  await server.stop(true);
  await sql.end();
  process.exit(0);
};
process.once("SIGTERM", () => void stop());
process.once("SIGINT", () => void stop());
