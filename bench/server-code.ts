// Server code through the app host against the same handler run natively in Bun: bench/server-code-handler.js's
// hello world (GET /api/hello) and its list of 20 documents through env.db (GET /api/items), at 1 and 32 keep-alive
// connections. (h) is the apps service on Postgres running the handler in the QuickJS sandbox; (n) is Bun.serve
// calling the same module's fetch with a native env (postgres.js). The ratio is the cost of the sandbox and of
// everything the app host adds (Host routing, the viewer, the rate limit, the host call for env.db).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  formatPaired,
  measurePaired,
  seedAppWithDocuments,
  type AppBenchSettings,
  type PairedBenchResult,
  type PairedRun,
} from "./app-bench.ts";

export const SERVER_LEVELS = [32, 1] as const;
/** The target: the hello-world handler through the app host at 32 connections, on the 2-core machine. */
export const SERVER_HELLO_GOAL = 1_000;
/** Issue 29: through the app host, at least these fractions of the same handler run natively. */
export const SERVER_GOAL_RATIOS = { hello: 0.25, list: 0.5 } as const;
const ADDRESS = "bench-server";
const SEEDED = 200;
const OPS = { hello: "/api/hello", list: "/api/items" } as const;
type Op = keyof typeof OPS;

export interface ServerSettings extends AppBenchSettings {
  databaseUrl: string;
}

/** `baseline` is (n), the handler natively in Bun; the better of two runs each, in the order n h h n. */
export type ServerRun = PairedRun<Op>;
export type ServerResult = PairedBenchResult<Op, Omit<ServerSettings, "databaseUrl">>;

export function measureServerCode(
  settings: ServerSettings,
  progress: (message: string) => void,
): Promise<ServerResult> {
  return measurePaired(
    settings,
    {
      name: "server",
      ops: ["hello", "list"],
      levels: SERVER_LEVELS,
      seed: (databaseUrl, blobDir) => {
        const source = readFileSync(join(import.meta.dir, "server-code-handler.js"), "utf8");
        const files = {
          "index.html": "<h1>bench</h1>",
          "api/index.js": { content: source, contentType: "text/javascript" },
        };
        return seedAppWithDocuments(
          databaseUrl,
          blobDir,
          { address: ADDRESS, files, config: { server: "api/index.js", collections: { items: { read: "anyone" } } } },
          "items",
          SEEDED,
        );
      },
      childEnv: (_which, op, seeded) => ({
        BENCH_ADDRESS: ADDRESS,
        BENCH_PATH: OPS[op],
        BENCH_SECRET: seeded.secret,
        BENCH_APP_ID: seeded.appId,
      }),
      scripts: { baseline: "server-code-native.ts", host: "server-code-server.ts" },
      baselineName: "native Bun",
      goals: [
        {
          name: `server code hello world req/s through the app host at 32 connections >= ${SERVER_HELLO_GOAL}`,
          op: "hello",
          clients: 32,
          kind: "rate",
          limit: SERVER_HELLO_GOAL,
        },
        {
          name: `server code hello world at 32 connections >= ${SERVER_GOAL_RATIOS.hello} x the handler run natively`,
          op: "hello",
          clients: 32,
          kind: "ratio",
          limit: SERVER_GOAL_RATIOS.hello,
        },
        {
          name: `server code env.db list at 32 connections >= ${SERVER_GOAL_RATIOS.list} x the handler run natively`,
          op: "list",
          clients: 32,
          kind: "ratio",
          limit: SERVER_GOAL_RATIOS.list,
        },
      ],
    },
    progress,
  );
}

export function formatServerCode(result: ServerResult): string {
  return formatPaired(result, {
    title: "Server code benchmark",
    letter: "n",
    baselineColumn: "native",
    legend: `hello = GET /api/hello, list = GET /api/items (env.db list of 20 of ${SEEDED} documents); (n) Bun.serve calling the handler natively, (h) the app host running it in QuickJS`,
  });
}
