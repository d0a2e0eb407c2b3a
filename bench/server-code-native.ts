// The server-code bench's (n): Bun.serve calling the same module's fetch natively, with a native env whose
// db(name).list runs the list query with postgres.js (same pool size as the apps service) and answers the same
// shape. No sandbox, no Host routing, no viewer, no rules, no limits.
import { join } from "node:path";
import { announce, baselineSettings, listDocuments } from "./baseline-child.ts";

type Handler = { fetch(request: Request, env: unknown): Response | Promise<Response> };
const handler = ((await import(join(import.meta.dir, "server-code-handler.js"))) as { default: Handler }).default;

const {
  port,
  sql,
  BENCH_APP_ID: appId,
  BENCH_PATH: path,
} = baselineSettings("server-code-native", ["BENCH_APP_ID", "BENCH_PATH"]);
const env = {
  viewer: null,
  db: (collection: string) => ({
    list: async (options: { limit?: number } = {}) => ({
      documents: await listDocuments(sql, appId, collection, options.limit ?? 20),
      next: null,
    }),
  }),
};

announce(Bun.serve({ port, hostname: "127.0.0.1", fetch: (request) => handler.fetch(request, env) }), sql, path);
