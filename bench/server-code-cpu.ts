// CPU per request of the app host running server code, by thread (not part of `bun run bench`): the server-code
// bench's (h) as a child process, warmed, then loaded from here; each thread's CPU time read from /proc before and
// after. Steadier than req/s on a crowded machine, and it shows the app host's own thread apart from the sandbox
// workers and the JIT. `bun bench/server-code-cpu.ts`; CONC (connections, 8), N (measured requests, 8000),
// WARM (requests per connection first, 500), PATHS (/api/hello,/api/items), BENCH_DATABASE_URL.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { seedAppWithDocuments } from "./app-bench.ts";
import { Child, createDatabase, freePort } from "./children.ts";

const serverUrl = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const connections = Number(process.env.CONC ?? 8);
const measured = Number(process.env.N ?? 8000);
const warm = Number(process.env.WARM ?? 500);
const paths = (process.env.PATHS ?? "/api/hello,/api/items").split(",");
const ADDRESS = "bench-server";

/** CPU milliseconds per thread name of a process (its main thread as "main"; same-named threads summed). */
function threadCpu(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "latin1");
      const name = tid === String(pid) ? "main" : stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out.set(name, (out.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) * 10);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}

const database = await createDatabase(serverUrl, `hatch_bench_cpu_${Date.now().toString(36)}_${process.pid}`);
const blobDir = mkdtempSync(join(tmpdir(), "hatch-bench-cpu-"));
let child: Child | null = null;
try {
  const source = readFileSync(join(import.meta.dir, "server-code-handler.js"), "utf8");
  const { appId } = await seedAppWithDocuments(
    database.url,
    blobDir,
    {
      address: ADDRESS,
      files: { "index.html": "<h1>bench</h1>", "api/index.js": { content: source, contentType: "text/javascript" } },
      config: { server: "api/index.js", collections: { items: { read: "anyone" } } },
    },
    "items",
    200,
  );
  const port = freePort();
  child = new Child("server-code-server", [process.execPath, join(import.meta.dir, "server-code-server.ts")], {
    ...process.env,
    PORT: String(port),
    DATABASE_URL: database.url,
    BLOB_DIR: blobDir,
    BENCH_ADDRESS: ADDRESS,
    BENCH_PATH: paths[0],
    BENCH_SECRET: randomBytes(32).toString("hex"),
    BENCH_APP_ID: appId,
  });
  await child.waitFor("READY", 60_000);
  const pid = child.proc.pid;
  const one = async (path: string) => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      headers: { host: `${ADDRESS}.localhost:${port}` },
    });
    if (response.status !== 200) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    await response.arrayBuffer();
  };
  const load = (path: string, perConnection: number) =>
    Promise.all(
      Array.from({ length: connections }, async () => {
        for (let i = 0; i < perConnection; i++) await one(path);
      }),
    );
  for (const path of paths) {
    await load(path, warm);
    const before = threadCpu(pid);
    const started = performance.now();
    await load(path, Math.ceil(measured / connections));
    const seconds = (performance.now() - started) / 1000;
    const count = Math.ceil(measured / connections) * connections;
    const spent = [...threadCpu(pid)].map(([name, ms]) => [name, ms - (before.get(name) ?? 0)] as const);
    const total = spent.reduce((sum, [, ms]) => sum + ms, 0);
    const parts = spent.filter(([, ms]) => ms > 0).map(([name, ms]) => `${name} ${Math.round((ms * 1000) / count)}`);
    process.stdout.write(
      `${path} x${connections}: ${Math.round(count / seconds)} req/s, CPU µs per request ${Math.round((total * 1000) / count)} (${parts.join(", ")})\n`,
    );
  }
} finally {
  await child?.stop();
  await database.drop();
  rmSync(blobDir, { recursive: true, force: true });
}
