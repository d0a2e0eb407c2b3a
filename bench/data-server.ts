// The app host's data routes under test: the apps service as deployed (startAppsService) on the real Postgres of
// DATABASE_URL (already migrated and seeded by bench/data.ts), on the in-process bus. Prints
// `BENCH_READY {"url": …, "host": …}` with the app's collection URL: connect to url, send Host: host.
import { openServiceDatabase } from "@hatch/platform";
import { APPS_MIGRATIONS } from "@hatch/apps";
import { startBenchApps } from "./apps-process.ts";
import { MARKER } from "./children.ts";

const port = Number(process.env.PORT);
const {
  DATABASE_URL: url,
  BLOB_DIR: blobDir,
  BENCH_ADDRESS: address,
  BENCH_PATH: path,
  BENCH_SECRET: secret,
} = process.env;
if (!Number.isInteger(port) || port <= 0 || !url || !blobDir || !address || !path || !secret) {
  process.stderr.write(
    "data-server: PORT, DATABASE_URL, BLOB_DIR, BENCH_ADDRESS, BENCH_PATH and BENCH_SECRET are required\n",
  );
  process.exit(2);
}

const database = await openServiceDatabase(
  { kind: "postgres", url },
  { schema: "apps", migrationsFolder: APPS_MIGRATIONS },
);
// One anonymous load generator makes every request: the per-viewer limit would otherwise be what is measured.
await startBenchApps(
  database,
  { APP_PORT: String(port), APP_HOST: "127.0.0.1", BLOB_DIR: blobDir, DATA_REQUESTS_PER_MINUTE: "100000000" },
  // The account on Pro, as billing would answer: every add is checked against the plan's storage.
  { secret, plan: "pro" },
);
process.stdout.write(
  `${MARKER}READY ${JSON.stringify({ url: `http://127.0.0.1:${port}${path}`, host: `${address}.localhost:${port}` })}\n`,
);
