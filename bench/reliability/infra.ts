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

export interface RoundRobinProxy {
  stop(): Promise<void>;
}

/**
 * nginx (Debian's) as a round-robin proxy without affinity, each site on its loopback port in front of its upstreams:
 * every request goes to the next copy; one that refuses the connection is skipped for 2 s and the request goes to the
 * other (a request already sent to a copy is never sent again). The Host header is passed on (app hosts route by it),
 * answers stream (SSE). Caddy 2.6 (Debian's) was tried first: its retry of a POST after a refused connection sent an
 * empty body, and with buffer_requests answers reached the wrong requests.
 */
export async function roundRobinProxy(
  work: Workdir,
  sites: { name: string; port: number; upstreams: number[] }[],
): Promise<RoundRobinProxy> {
  const dir = join(work.dir, "nginx");
  mkdirSync(dir);
  const config = join(dir, "nginx.conf");
  writeFileSync(
    config,
    `daemon off;
master_process off;
pid ${dir}/nginx.pid;
error_log ${work.dir}/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  client_max_body_size 16m;
${sites
  .map(
    (site) => `  upstream ${site.name} {
${site.upstreams.map((port) => `    server 127.0.0.1:${port} max_fails=1 fail_timeout=2s;`).join("\n")}
  }
  server {
    listen 127.0.0.1:${site.port};
    listen [::1]:${site.port};
    location / {
      proxy_pass http://${site.name};
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;
      proxy_buffering off;
      proxy_read_timeout 600s;
      proxy_next_upstream error timeout;
      proxy_next_upstream_tries 2;
      proxy_connect_timeout 2s;
    }
  }`,
  )
  .join("\n")}
}
`,
  );
  const binary = ["/usr/sbin/nginx", "/usr/bin/nginx"].find((path) => existsSync(path)) ?? "nginx";
  const child = Bun.spawn([binary, "-c", config, "-p", dir, "-e", join(work.dir, "nginx-error.log")], {
    stdin: "ignore",
    stdout: "ignore",
    stderr: Bun.file(join(work.dir, "nginx.log")),
  });
  work.track("nginx", child);
  for (const site of sites) await waitFor(`nginx on ${site.port}`, () => tcpOpen(site.port), 15_000);
  return {
    async stop() {
      if (!alive(child)) return;
      child.kill("SIGTERM");
      await child.exited;
    },
  };
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
