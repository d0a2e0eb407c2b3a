import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { startCluster } from "../scripts/cluster-lib.ts";
import { Child, freePort, runCommand } from "./children.ts";
import type { CpuGroup } from "./cpu.ts";
import type { Era } from "./load-worker.ts";

export type TargetKey = "a" | "b" | "c";

export const TARGETS: Record<TargetKey, { label: string; description: string }> = {
  a: {
    label: "(a) baseline",
    description:
      "bare MCP server per era, one process, no auth: 2025 the SDK v1 server with a session per client, 2026 the SDK v2 stateless handler (createMcpHandler); the orgs whoami handler (ensurePerson) on the real Postgres, answering in the format the gateway used for that era's client, so (c) <era> / (a) <era> isolates the gateway and the bus",
  },
  b: {
    label: "(b) embedded",
    description:
      "`bun run dev`'s stack (startHatch): gateway + services in one process, in-process bus, PGlite in memory",
  },
  c: {
    label: "(c) cluster",
    description: "gateway and orgs as separate `bun run start` processes over NATS and Postgres (startCluster)",
  },
};

export interface RunningTarget {
  mcpUrl: string;
  token?: string;
  /** What the report should record about how it ran. */
  details: Record<string, unknown>;
  /** Hatch's own processes, for the CPU breakdown. */
  cpuGroups: CpuGroup[];
  stop(): Promise<void>;
}

export interface TargetSettings {
  natsUrl: string;
  logLevel: string;
  runId: string;
}

const START_TIMEOUT_MS = 60_000;

/**
 * The bench measures speed, not the gateway's caps: its 32 clients are one user, each 2025 client its own session
 * (the per-user cap is 20 by default), and it makes a few thousand calls a second on one grant (300 a minute by
 * default). Raised far enough that nothing is refused; every call is still counted, as in production.
 */
export const BENCH_GATEWAY_ENV = {
  MAX_SESSIONS_PER_USER: "64",
  TOOL_CALLS_PER_MINUTE_PER_GRANT: "10000000",
  TOOL_CALLS_PER_MINUTE_PER_USER: "10000000",
};

function childEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
  // A stray BASE_URL would change the token audience; the bench always serves on loopback.
  delete env.BASE_URL;
  return { ...env, ...extra };
}

/** Each era's baseline server: the smallest honest server of that protocol version (bench/README.md). */
const BASELINE_SERVERS: Record<Era, string> = {
  "2025": "baseline-server-2025.ts",
  "2026": "baseline-server-2026.ts",
};

/**
 * (a) for one era. `answer`: how it answers tool calls, plain JSON or an SSE stream; the bench matches what the
 * gateway did for the same era's client.
 */
export async function startBaseline(databaseUrl: string, era: Era, answer: "json" | "sse"): Promise<RunningTarget> {
  const env = childEnv({ DATABASE_URL: databaseUrl, PORT: String(freePort()), BENCH_ANSWER: answer });
  const script = BASELINE_SERVERS[era];
  const child = new Child(`baseline ${era}`, [process.execPath, join(import.meta.dir, script)], env);
  try {
    const ready = JSON.parse(await child.waitFor("READY", START_TIMEOUT_MS)) as {
      mcpUrl: string;
      poolSize: number;
      answer: string;
    };
    return {
      mcpUrl: ready.mcpUrl,
      details: { server: `bench/${script}`, database: "postgres", dbPoolSize: ready.poolSize, answer: ready.answer },
      cpuGroups: [{ name: "server", roots: [child.proc.pid] }],
      stop: () => child.stop(),
    };
  } catch (error) {
    await child.stop();
    throw error;
  }
}

export async function startEmbedded(settings: TargetSettings): Promise<RunningTarget> {
  const child = new Child(
    "embedded",
    [process.execPath, join(import.meta.dir, "embedded-server.ts")],
    childEnv({ PORT: String(freePort()), LOG_LEVEL: settings.logLevel, ...BENCH_GATEWAY_ENV }),
  );
  try {
    const ready = JSON.parse(await child.waitFor("READY", START_TIMEOUT_MS)) as { mcpUrl: string; token: string };
    return {
      mcpUrl: ready.mcpUrl,
      token: ready.token,
      details: { database: "pglite (memory)", bus: "in-process" },
      cpuGroups: [{ name: "server", roots: [child.proc.pid] }],
      stop: () => child.stop(),
    };
  } catch (error) {
    await child.stop();
    throw error;
  }
}

/** The distributed deployment with only orgs behind the gateway; the user and token come from `bun run admin`. */
export async function startClusterTarget(settings: TargetSettings, databaseUrl: string): Promise<RunningTarget> {
  const port = freePort();
  const secret = randomBytes(32).toString("hex");
  const cluster = await startCluster({
    natsUrl: settings.natsUrl,
    databaseUrl,
    secret,
    busPrefix: `bench_${settings.runId}`,
    port,
    services: ["orgs"],
    logLevel: settings.logLevel,
    stdout: "ignore",
    env: BENCH_GATEWAY_ENV,
  });
  try {
    const env = childEnv({ DATABASE_URL: databaseUrl, HATCH_SECRET: secret, PORT: String(port), LOG_LEVEL: "warn" });
    const email = "cluster@bench.example";
    await admin(env, ["user:create", "--email", email, "--password", "bench password 123", "--name", "Cluster Bench"]);
    const token = (await admin(env, ["token:issue", "--email", email, "--ttl", "3600"])).trim().split("\n").pop()!;
    return {
      mcpUrl: `http://127.0.0.1:${port}/mcp`,
      token,
      details: {
        database: "postgres",
        bus: "nats",
        orgsDbPoolSize: Number(process.env.DB_POOL_SIZE ?? 10),
        processes: [...cluster.processes.keys()],
      },
      cpuGroups: [...cluster.processes].map(([name, proc]) => ({ name, roots: [proc.pid] })),
      stop: () => cluster.stop(),
    };
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

async function admin(env: Record<string, string>, args: string[]): Promise<string> {
  const result = await runCommand([process.execPath, "run", "admin", ...args], env);
  if (result.code !== 0) throw new Error(`bun run admin ${args[0]} failed (${result.code}): ${result.stderr.trim()}`);
  return result.stdout;
}
