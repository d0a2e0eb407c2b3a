// Debian's PgBouncer (`apt-get install pgbouncer`) in front of a test database, started by the test on a loopback port
// with a config it writes: transaction pooling, trust auth, round robin over its server connections (so consecutive
// transactions land on different ones, as on a busy pooler), and the admin console for SHOW CLIENTS.
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { collect, type Output } from "./processes.ts";
import { freePort } from "./servers.ts";

export const PGBOUNCER = "/usr/sbin/pgbouncer";
export const hasPgBouncer = existsSync(PGBOUNCER);

export interface PgBouncer {
  /** The test database through PgBouncer (database name `hatch`). */
  url: string;
  /** The clients PgBouncer holds now, by application_name (its admin console's SHOW CLIENTS). */
  clientsByApplication(): Promise<Map<string, number>>;
  /** What the running PgBouncer logs (the one started last). */
  readonly output: Output;
  /** SIGKILL (a crash: every client connection drops), then waits for the exit. */
  kill(): Promise<void>;
  /** Starts it again on the same port and config (after kill). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export interface PgBouncerOptions {
  /** Server connections per database and user (default 20). */
  poolSize?: number;
  /** Called with the process whenever it starts (e.g. to record its pid for a clean-up guard). */
  onSpawn?(child: Bun.Subprocess): void;
}

export async function startPgBouncer(directUrl: string, options: PgBouncerOptions = {}): Promise<PgBouncer> {
  const direct = new URL(directUrl);
  const dir = mkdtempSync(join(tmpdir(), "hatch-pgbouncer-"));
  // PgBouncer refuses to run as root; as root it switches to the postgres user (-u), who must read the config.
  chmodSync(dir, 0o755);
  const port = freePort();
  const user = decodeURIComponent(direct.username || "postgres");
  writeFileSync(join(dir, "userlist.txt"), `"${user}" ""\n`, { mode: 0o644 });
  writeFileSync(
    join(dir, "pgbouncer.ini"),
    [
      "[databases]",
      `hatch = host=${direct.hostname} port=${direct.port || 5432} dbname=${direct.pathname.slice(1)} user=${user}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${join(dir, "userlist.txt")}`,
      `admin_users = ${user}`,
      "pool_mode = transaction",
      "server_round_robin = 1",
      `default_pool_size = ${options.poolSize ?? 20}`,
      "max_client_conn = 500",
      "",
    ].join("\n"),
    { mode: 0o644 },
  );
  const asRoot = process.getuid?.() === 0 ? ["-u", "postgres"] : [];
  let child: Bun.Subprocess<"ignore", "pipe", "pipe">;
  let output: Output;
  const spawn = async () => {
    child = Bun.spawn([PGBOUNCER, ...asRoot, join(dir, "pgbouncer.ini")], {
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    options.onSpawn?.(child);
    output = collect(child.stderr);
    collect(child.stdout);
    const started = child;
    await Promise.race([
      output.waitFor("process up"),
      started.exited.then((code) => {
        throw new Error(`pgbouncer exited (${code}) before it listened:\n${output.text}`);
      }),
    ]);
  };
  await spawn();
  const url = `postgres://${user}@127.0.0.1:${port}/hatch`;
  const admin = postgres(`postgres://${user}@127.0.0.1:${port}/pgbouncer`, {
    max: 1,
    prepare: false,
    fetch_types: false,
    onnotice: () => {},
  });
  return {
    url,
    get output() {
      return output;
    },
    async kill() {
      child.kill("SIGKILL");
      await child.exited;
    },
    restart: spawn,
    async clientsByApplication() {
      const rows = await admin.unsafe<Array<{ application_name: string }>>("show clients");
      const counts = new Map<string, number>();
      for (const row of rows) counts.set(row.application_name, (counts.get(row.application_name) ?? 0) + 1);
      return counts;
    },
    async stop() {
      await admin.end({ timeout: 1 }).catch(() => {});
      child.kill("SIGTERM");
      await child.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
