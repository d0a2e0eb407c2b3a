// The baseline of the data bench: Bun.serve and postgres.js doing only the query behind the same answer, with the
// same pool size as the apps service: GET → the first 20 documents of the collection (the list query's shape, on
// the same index), POST → one insert. No routing by Host, no viewer, no rules, no limits, no counters.
import { randomBytes } from "node:crypto";
import { announce, baselineSettings, listDocuments } from "./baseline-child.ts";

const {
  port,
  sql,
  BENCH_APP_ID: appId,
  BENCH_COLLECTION: collection,
} = baselineSettings("data-baseline-server", ["BENCH_APP_ID", "BENCH_COLLECTION"]);
const headers = { "Content-Type": "application/json; charset=utf-8" };

const server = Bun.serve({
  port,
  hostname: "127.0.0.1",
  async fetch(request) {
    if (request.method === "POST") {
      const data = (await request.json()) as Record<string, unknown>;
      const id = randomBytes(12).toString("base64url");
      const [row] =
        await sql`insert into apps.documents (app_id, collection, id, data, bytes) values (${appId}, ${collection}, ${id}, ${sql.json(data as never)}, ${JSON.stringify(data).length}) returning id, data, created_at, updated_at`;
      return new Response(
        JSON.stringify({
          id: row!.id,
          ...row!.data,
          createdAt: row!.created_at,
          updatedAt: row!.updated_at,
          createdBy: null,
        }),
        { status: 201, headers },
      );
    }
    return new Response(JSON.stringify({ documents: await listDocuments(sql, appId, collection, 20), next: null }), {
      headers,
    });
  },
});
announce(server, sql, "/");
