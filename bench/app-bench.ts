// What the app host benches (data, server code) share: an app seeded with a collection of documents, one load run
// against a child server process, and the paired runs that compare a baseline with the app host in one sitting.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { openServiceDatabase } from "@hatch/shared";
import { APPS_MIGRATIONS } from "@hatch/apps";
import { createDiskBlobStore } from "../services/apps/src/blobs/disk.ts";
import { dataUsage, documents } from "../services/apps/src/db/schema.ts";
import { seedApp, type SeedContent } from "../services/apps/test/support/seed.ts";
import { Child } from "./children.ts";
import { runLoad, type LoadOptions, type RunStats } from "./load.ts";

export interface AppBenchSettings {
  seconds: number;
  warmupSeconds: number;
  workers: number;
}

/** A public app at `address` with `files` and `config`, and `count` documents in `collection` (one a second, oldest first). */
export async function seedAppWithDocuments(
  databaseUrl: string,
  blobDir: string,
  app: { address: string; files: Record<string, SeedContent>; config: Record<string, unknown> },
  collection: string,
  count: number,
): Promise<{ appId: string }> {
  const handle = await openServiceDatabase({ kind: "postgres", url: databaseUrl }, { schema: "apps", migrationsFolder: APPS_MIGRATIONS });
  try {
    const seeded = await seedApp({ db: handle.db, blobs: createDiskBlobStore(blobDir) }, { ...app, visibility: "public" });
    const start = Date.now() - count * 1000;
    await handle.db.insert(documents).values(
      Array.from({ length: count }, (_, i) => {
        const data = { title: `Item ${i}`, done: i % 3 === 0, priority: i % 5, note: "A short note, about the length an app stores." };
        return { appId: seeded.id, collection, id: randomBytes(12).toString("base64url"), data, bytes: JSON.stringify(data).length, createdAt: new Date(start + i * 1000), updatedAt: new Date(start + i * 1000) };
      }),
    );
    await handle.db.insert(dataUsage).values({ appId: seeded.id, documents: count });
    return { appId: seeded.id };
  } finally {
    await handle.close();
  }
}

/** Starts `script` (a bench server that prints READY {url, host}), loads it with `clients` connections, stops it. */
export async function loadChildServer(script: string, env: Record<string, string | undefined>, http: Omit<NonNullable<LoadOptions["http"]>, "url" | "host">, clients: number, settings: AppBenchSettings): Promise<RunStats> {
  const child = new Child(script.replace(/\.ts$/, ""), [process.execPath, join(import.meta.dir, script)], env);
  try {
    const ready = JSON.parse(await child.waitFor("READY", 60_000)) as { url: string; host: string };
    return await runLoad({
      mcpUrl: "",
      http: { url: ready.url, host: ready.host, ...http },
      clients,
      workers: clients === 1 ? 1 : settings.workers,
      warmupMs: settings.warmupSeconds * 1000,
      durationMs: settings.seconds * 1000,
      cpuGroups: [{ name: "server", roots: [child.proc.pid] }, { name: "postgres", comm: "postgres" }],
    });
  } finally {
    await child.stop();
  }
}

export interface Paired {
  baseline: RunStats;
  host: RunStats;
  /** host req/s over baseline req/s. */
  ratio: number | null;
  allRuns: { baseline: number[]; host: number[] };
}

/**
 * Runs the baseline and the app host twice each, in the order baseline, host, host, baseline (so drift on a noisy
 * machine hits both alike), and keeps the better run of each.
 */
export async function pairedRuns(measure: (which: "baseline" | "host") => Promise<RunStats>, report: (which: "baseline" | "host", stats: RunStats) => void): Promise<Paired> {
  const runs: Record<"baseline" | "host", RunStats[]> = { baseline: [], host: [] };
  for (const which of ["baseline", "host", "host", "baseline"] as const) {
    const stats = await measure(which);
    runs[which].push(stats);
    report(which, stats);
  }
  const best = (list: RunStats[]) => list.reduce((a, b) => (b.callsPerSecond > a.callsPerSecond ? b : a));
  const baseline = best(runs.baseline);
  const host = best(runs.host);
  const ratio = baseline.callsPerSecond > 0 ? Math.round((host.callsPerSecond / baseline.callsPerSecond) * 100) / 100 : null;
  return { baseline, host, ratio, allRuns: { baseline: runs.baseline.map((r) => r.callsPerSecond), host: runs.host.map((r) => r.callsPerSecond) } };
}
