// The app host under test: the apps service as `bun run dev` starts it (startAppsService on the in-process bus and
// an in-memory PGlite; serving asks the database nothing once the app is cached), with one public app whose
// index.html is BENCH_FILE. Prints `BENCH_READY {"url": …, "host": …}`: connect to url, send Host: host.
import { openEmbeddedPostgres, openServiceDatabase } from "@hatch/platform";
import { APPS_MIGRATIONS } from "@hatch/apps";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { seedApp } from "../services/apps/test/support/seed.ts";
import { startBenchApps } from "./apps-process.ts";
import { MARKER } from "./children.ts";

const port = Number(process.env.PORT);
const file = process.env.BENCH_FILE;
if (!Number.isInteger(port) || port <= 0 || !file) {
  process.stderr.write("app-host-server: PORT and BENCH_FILE are required\n");
  process.exit(2);
}

const pglite = await openEmbeddedPostgres();
const database = await openServiceDatabase(
  { kind: "pglite", client: pglite },
  { schema: "apps", migrationsFolder: APPS_MIGRATIONS },
);
const apps = await startBenchApps(
  database,
  { APP_PORT: String(port), APP_HOST: "127.0.0.1", BLOB_DIR: mkdtempSync(join(tmpdir(), "hatch-bench-host-")) },
  { onStop: () => pglite.close() },
);
await seedApp(apps.context, {
  address: "bench",
  visibility: "public",
  files: { "index.html": await Bun.file(file).bytes() },
});
process.stdout.write(
  `${MARKER}READY ${JSON.stringify({ url: `http://127.0.0.1:${port}/`, host: `bench.localhost:${port}` })}\n`,
);
