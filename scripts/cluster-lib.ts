import type { Subprocess } from "bun";
import { closeSync, openSync } from "node:fs";
import { join, resolve } from "node:path";
import { DEFAULT_SHUTDOWN_TIMEOUT_MS } from "@hatch/platform";
import { type ServiceName } from "@hatch/contracts";

const ROOT = join(import.meta.dir, "..");

export interface ClusterOptions {
  natsUrl: string;
  databaseUrl: string;
  secret: string;
  busPrefix: string;
  port: number;
  /** Services to start as their own processes (default all four). */
  services?: ServiceName[];
  logLevel?: string;
  /** The app host's port (default APP_PORT or 3001) and where the apps service keeps files (default DATA_DIR/blobs). */
  appPort?: number;
  blobDir?: string;
  /** Where child output goes; default: this process's stdout/stderr. */
  stdout?: "inherit" | "ignore";
  /** When set, each child's stdout and stderr are appended to `<logDir>/<name>.log` instead (respawns too). */
  logDir?: string;
  /** NATS passwords by process name: each process connects as its own NATS user (deploy/nats-auth.conf). */
  natsPasswords?: Partial<Record<string, string>>;
  /** More settings for every child (e.g. the bench's raised limits). */
  env?: Record<string, string>;
  /** Each child's SHUTDOWN_TIMEOUT_MS (default the setting, or 10 s); stop() kills a child still running past it. */
  shutdownTimeoutMs?: number;
  /**
   * Copies of the gateway and of each service (default 1). With more, the processes are named `<name>-<n>` (from 1),
   * and `perCopy` gives each copy its own settings: a gateway copy its PORT, an apps copy its APP_PORT, and so on.
   */
  copies?: number;
  perCopy?: (name: string, copy: number) => Record<string, string>;
  /** The public URL in front of the gateway copies (a proxy's); default http://localhost:<port>. */
  baseUrl?: string;
  /** How long the start may take until every gateway reports every service healthy (default 30 s). */
  startTimeoutMs?: number;
}

export interface Cluster {
  baseUrl: string;
  processes: Map<string, Subprocess>;
  /** SIGTERM to every child; one still running past its own deadline (plus a margin) is killed. */
  stop(): Promise<void>;
  /** SIGKILL to every child still running (a second signal to the launcher). */
  kill(): void;
  /** Starts the named process again (after it exited or was killed), as it was started first; resolves when spawned. */
  respawn(name: string): Subprocess;
}

/** Where the cluster's apps service keeps files: BLOB_DIR, else DATA_DIR/blobs (a relative DATA_DIR from the checkout). */
export function clusterBlobDir(env: Record<string, string | undefined>): string {
  return env.BLOB_DIR || resolve(ROOT, env.DATA_DIR || ".data", "blobs");
}

/** Past a child's own deadline, how long stop() waits for it to exit before it kills it. */
const KILL_MARGIN_MS = 2_000;

/** Starts the gateway and each service as separate `bun run start` processes and waits for /healthz. */
export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const shutdownTimeoutMs =
    options.shutdownTimeoutMs ?? Number(process.env.SHUTDOWN_TIMEOUT_MS || DEFAULT_SHUTDOWN_TIMEOUT_MS);
  const env = {
    ...process.env,
    NATS_URL: options.natsUrl,
    DATABASE_URL: options.databaseUrl,
    HATCH_SECRET: options.secret,
    BUS_PREFIX: options.busPrefix,
    PORT: String(options.port),
    APP_PORT: String(options.appPort ?? process.env.APP_PORT ?? 3001),
    BLOB_DIR: options.blobDir ?? clusterBlobDir(process.env),
    LOG_LEVEL: options.logLevel ?? process.env.LOG_LEVEL ?? "info",
    SHUTDOWN_TIMEOUT_MS: String(shutdownTimeoutMs),
    // Each child watches this pid and stops when it goes away: a launcher killed hard leaves no copy running.
    HATCH_PARENT_PID: String(process.pid),
    ...options.env,
  };
  const processes = new Map<string, Subprocess>();
  const services = options.services ?? (["orgs", "apps", "domains", "billing"] as ServiceName[]);
  const copies = options.copies ?? 1;
  /** Each process's component (gateway or a service) and its settings, by process name. */
  const specs = new Map<string, { component: string; env: Record<string, string | undefined> }>();
  for (const component of [...services, "gateway"])
    for (let copy = 1; copy <= copies; copy++) {
      const own = copies > 1 ? (options.perCopy?.(component, copy) ?? {}) : {};
      const password = options.natsPasswords?.[component];
      specs.set(copies > 1 ? `${component}-${copy}` : component, {
        component,
        env: { ...env, ...(password ? { NATS_USER: component, NATS_PASSWORD: password } : {}), ...own },
      });
    }
  // The main file itself, not `bun run start`: that adds a process between, and a signal to it is not passed on. Each
  // child in its own process group: a Ctrl-C at the terminal reaches only this launcher, which stops each child once.
  const spawn = (name: string) => {
    const spec = specs.get(name)!;
    const log = options.logDir ? openSync(join(options.logDir, `${name}.log`), "a") : undefined;
    const child = Bun.spawn([process.execPath, "src/main.ts"], {
      cwd: spec.component === "gateway" ? join(ROOT, "gateway") : join(ROOT, "services", spec.component),
      env: spec.env,
      stdout: log ?? options.stdout ?? "inherit",
      stderr: log ?? "inherit",
      stdin: "ignore",
      detached: true,
    });
    if (log !== undefined) closeSync(log);
    processes.set(name, child);
    return child;
  };
  for (const name of specs.keys()) spawn(name);

  const cluster: Cluster = {
    baseUrl: options.baseUrl ?? `http://localhost:${options.port}`,
    processes,
    async stop() {
      const running = [...processes.values()].filter((child) => child.exitCode === null && child.signalCode === null);
      for (const child of running) child.kill("SIGTERM");
      await Promise.all(
        running.map(async (child) => {
          const timer = setTimeout(() => child.kill("SIGKILL"), shutdownTimeoutMs + KILL_MARGIN_MS);
          await child.exited;
          clearTimeout(timer);
        }),
      );
    },
    kill() {
      for (const child of processes.values())
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    },
    respawn(name) {
      const old = processes.get(name);
      if (!old || !specs.has(name)) throw new Error(`no process named ${name} in this cluster`);
      if (old.exitCode === null && old.signalCode === null)
        throw new Error(`${name} is still running (pid ${old.pid}); stop it first`);
      return spawn(name);
    },
  };
  const wanted = new Set<string>(services);
  const startTimeoutMs = options.startTimeoutMs ?? 30_000;
  const deadline = Date.now() + startTimeoutMs;
  for (;;) {
    const exited = [...processes].find(([, child]) => child.exitCode !== null);
    if (exited) {
      await cluster.stop();
      throw new Error(`${exited[0]} exited with code ${exited[1].exitCode} during start`);
    }
    // Each gateway copy on its own port (a proxy in front may not run yet) reports every service healthy.
    const gateways = [...specs.values()].filter((spec) => spec.component === "gateway");
    const reports = await Promise.all(
      gateways.map((spec) =>
        fetch(`http://localhost:${spec.env.PORT}/healthz`)
          .then((r) => r.json() as Promise<{ services: Record<string, { ok: boolean }> }>)
          .catch(() => null),
      ),
    );
    if (reports.every((report) => report && [...wanted].every((s) => report.services[s]?.ok))) return cluster;
    if (Date.now() > deadline) {
      await cluster.stop();
      throw new Error(`cluster did not become healthy within ${startTimeoutMs / 1000} s`);
    }
    await Bun.sleep(200);
  }
}
