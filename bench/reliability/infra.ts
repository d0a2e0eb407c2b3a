// The reliability run's own nats-server and Postgres: private instances on free loopback ports, in a temporary
// folder, so restarting them never touches the machine's shared servers. A guard process (a shell loop) kills
// whatever is left and removes the folder if this process dies without cleaning up (SIGKILL, a crash).
import type { Subprocess } from "bun";
import { chownSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The load is the point, not plan limits or rate limits: both are lifted for the run's processes. */
export const LOAD_ENV = {
  BILLING_ENFORCE_LIMITS: "false",
  TOOL_CALLS_PER_MINUTE_PER_GRANT: "1000000",
  TOOL_CALLS_PER_MINUTE_PER_USER: "1000000",
  DATA_REQUESTS_PER_MINUTE: "1000000",
};

/** A free TCP port on 127.0.0.1 (asked of the kernel, then released). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what} did not come up within ${timeoutMs / 1000} s`);
    await Bun.sleep(100);
  }
}

async function tcpOpen(port: number): Promise<boolean> {
  try {
    const socket = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
    socket.end();
    return true;
  } catch {
    return false;
  }
}

export interface Workdir {
  dir: string;
  /** Records a child's pid for the guard (it kills what is listed when this process is gone). */
  track(name: string, child: Subprocess): void;
  remove(): void;
}

/** A temporary folder plus a guard that cleans it up (and the tracked processes) once this process is gone. */
export function makeWorkdir(): Workdir {
  const dir = mkdtempSync(join(tmpdir(), "hatch-reliability-"));
  mkdirSync(join(dir, "pids"));
  // setsid: the guard is in no process group of ours, so it outlives a kill of this run's group.
  const guard = Bun.spawn(
    [
      "setsid",
      "sh",
      "-c",
      `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; for f in "${dir}"/pids/*; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done; sleep 1; rm -rf "${dir}"`,
    ],
    { stdin: "ignore", stdout: "ignore", stderr: "ignore" },
  );
  guard.unref();
  return {
    dir,
    track(name, child) {
      writeFileSync(join(dir, "pids", name), String(child.pid));
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** On a failed run the processes' logs are copied out of the work folder (which is removed) for a look. */
export function keepLogs(work: Workdir, runId: string, log: (line: string) => void): void {
  const to = join(tmpdir(), `hatch-reliability-logs-${runId}`);
  try {
    cpSync(join(work.dir, "logs"), to, { recursive: true });
    for (const name of readdirSync(work.dir)) if (name.endsWith(".log")) cpSync(join(work.dir, name), join(to, name));
    log(`logs of the processes: ${to}`);
  } catch {}
}

function alive(child: Subprocess | null): child is Subprocess {
  return child !== null && child.exitCode === null && child.signalCode === null;
}

export interface Server {
  url: string;
  port: number;
  start(): Promise<void>;
  /** Stops it with the signal (SIGKILL = a crash; Postgres: SIGQUIT = immediate shutdown) and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** nats-server with JetStream, its store in the work folder (kept across restarts, as a real server's disk). */
export async function privateNats(work: Workdir): Promise<Server> {
  const binary = ["/usr/sbin/nats-server", "/usr/bin/nats-server"].find((path) => existsSync(path)) ?? "nats-server";
  const port = await freePort();
  const store = join(work.dir, "nats");
  let child: Subprocess | null = null;
  const server: Server = {
    url: `nats://127.0.0.1:${port}`,
    port,
    async start() {
      // 8 MB payloads, as deploy/nats.conf: inline publishes are larger than the default 1 MB.
      const config = join(work.dir, "nats.conf");
      writeFileSync(config, "max_payload: 8MB\n");
      child = Bun.spawn([binary, "-c", config, "-js", "-a", "127.0.0.1", "-p", String(port), "-sd", store], {
        stdin: "ignore",
        stdout: "ignore",
        stderr: Bun.file(join(work.dir, "nats.log")),
      });
      work.track("nats", child);
      await waitFor("nats-server", () => tcpOpen(port), 15_000);
    },
    async stop(signal = "SIGTERM") {
      if (!alive(child)) return;
      child.kill(signal);
      await child.exited;
    },
  };
  await server.start();
  return server;
}

function postgresBin(): string {
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  const found = versions.map((v) => join(root, v, "bin")).find((bin) => existsSync(join(bin, "postgres")));
  if (!found)
    throw new Error(
      "No Postgres binaries under /usr/lib/postgresql/*/bin: install postgresql (apt-get install postgresql)",
    );
  return found;
}

/** Postgres refuses to run as root: there it runs as the `postgres` system user (setpriv execs, so the pid is its own). */
function asPostgresUser(command: string[]): string[] {
  if (process.getuid?.() !== 0) return command;
  return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", ...command];
}

function postgresIds(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const line = (require("node:fs").readFileSync("/etc/passwd", "utf8") as string)
    .split("\n")
    .find((l) => l.startsWith("postgres:"));
  if (!line) throw new Error("Running as root needs the postgres system user (it comes with the postgresql package)");
  const [, , uid, gid] = line.split(":");
  return { uid: Number(uid), gid: Number(gid) };
}

/** A fresh Postgres cluster (initdb, trust on loopback), its socket in the work folder, not the machine's. */
export async function privatePostgres(work: Workdir): Promise<Server> {
  const bin = postgresBin();
  const port = await freePort();
  const home = join(work.dir, "pg");
  mkdirSync(home);
  const ids = postgresIds();
  if (ids) {
    chownSync(work.dir, ids.uid, ids.gid);
    chownSync(home, ids.uid, ids.gid);
  }
  const data = join(home, "data");
  const init = Bun.spawnSync(
    asPostgresUser([join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]),
    {
      stdout: "ignore",
      stderr: "pipe",
    },
  );
  if (init.exitCode !== 0) throw new Error(`initdb failed: ${init.stderr.toString().trim()}`);
  let child: Subprocess | null = null;
  const server: Server = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async start() {
      child = Bun.spawn(
        asPostgresUser([
          join(bin, "postgres"),
          "-D",
          data,
          "-p",
          String(port),
          "-k",
          home,
          "-c",
          "listen_addresses=127.0.0.1",
          "-c",
          "max_connections=200",
        ]),
        { stdin: "ignore", stdout: "ignore", stderr: Bun.file(join(work.dir, `postgres-${Date.now()}.log`)) },
      );
      work.track("postgres", child);
      await waitFor(
        "Postgres",
        async () => {
          const check = Bun.spawnSync([join(bin, "pg_isready"), "-q", "-h", "127.0.0.1", "-p", String(port)]);
          return check.exitCode === 0;
        },
        30_000,
      );
    },
    async stop(signal = "SIGINT") {
      if (!alive(child)) return;
      child.kill(signal);
      await child.exited;
    },
  };
  await server.start();
  return server;
}
