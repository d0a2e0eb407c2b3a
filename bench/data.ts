// App data through the app host against postgres.js alone: `list` of 20 documents (GET /_hatch/db/items?limit=20)
// and `add` of one (POST) on a public app whose collection lets anyone read and create, at 1 and 32 keep-alive
// connections, against (q) a bare Bun.serve that runs only the same query with postgres.js on the same database.
// The ratio is the cost of everything the app host adds: routing by Host, the cached app and rules, the viewer,
// the rate limit, validation, the per-app counters and the JSON shape.
import {
  formatPaired,
  measurePaired,
  seedAppWithDocuments,
  type AppBenchSettings,
  type PairedBenchResult,
  type PairedRun,
} from "./app-bench.ts";

export const DATA_LEVELS = [32, 1] as const;
/** Issue 8's target: list reads at 32 connections, on the 2-core machine. */
export const DATA_READS_GOAL = 3_000;
/** Issue 29: an add through the app host at least this fraction of postgres.js running the same insert. */
export const DATA_ADD_GOAL_RATIO = 0.5;
const ADDRESS = "bench-data";
const COLLECTION = "items";
const SEEDED = 200;

export interface DataSettings extends AppBenchSettings {
  databaseUrl: string;
}

type Op = "list" | "add";
/** `baseline` is (q), postgres.js alone; the better of two runs each, measured in the order q h h q. */
export type DataRun = PairedRun<Op>;
export type DataResult = PairedBenchResult<Op, Omit<DataSettings, "databaseUrl">>;

export function measureData(settings: DataSettings, progress: (message: string) => void): Promise<DataResult> {
  return measurePaired(
    settings,
    {
      name: "data",
      ops: ["list", "add"],
      levels: DATA_LEVELS,
      // One public app with an open collection of SEEDED documents.
      seed: (databaseUrl, blobDir) =>
        seedAppWithDocuments(
          databaseUrl,
          blobDir,
          {
            address: ADDRESS,
            files: { "index.html": "<h1>bench</h1>" },
            config: { collections: { [COLLECTION]: { read: "anyone", create: "anyone" } } },
          },
          COLLECTION,
          SEEDED,
        ),
      childEnv: (_which, op, seeded) => ({
        BENCH_ADDRESS: ADDRESS,
        BENCH_PATH: op === "list" ? `/_hatch/db/${COLLECTION}?limit=20` : `/_hatch/db/${COLLECTION}`,
        BENCH_SECRET: seeded.secret,
        BENCH_APP_ID: seeded.appId,
        BENCH_COLLECTION: COLLECTION,
      }),
      scripts: { baseline: "data-baseline-server.ts", host: "data-server.ts" },
      request: (op) =>
        op === "add" ? { method: "POST", json: JSON.stringify({ title: "New item", done: false, priority: 2 }) } : {},
      baselineName: "postgres.js",
      goals: [
        {
          name: `app host list reads/s at 32 connections >= ${DATA_READS_GOAL}`,
          op: "list",
          clients: 32,
          kind: "rate",
          limit: DATA_READS_GOAL,
        },
        {
          name: `app host add req/s at 32 connections >= ${DATA_ADD_GOAL_RATIO} x postgres.js`,
          op: "add",
          clients: 32,
          kind: "ratio",
          limit: DATA_ADD_GOAL_RATIO,
        },
      ],
    },
    progress,
  );
}

export function formatData(result: DataResult): string {
  return formatPaired(result, {
    title: "Data benchmark",
    letter: "q",
    baselineColumn: "postgres.js",
    legend: `list = GET 20 of ${SEEDED} documents, add = POST one document; (q) Bun.serve + postgres.js running only the query, (h) the app host`,
  });
}
