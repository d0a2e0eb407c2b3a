import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CommonEnvSchema,
  createLogger,
  createNatsBus,
  createRateCounter,
  decodeJson,
  encodeJson,
  KvRateCounter,
  eventsStreamName,
  eventStreamFor,
  loadConfig,
  type Bus,
  type NatsBus,
} from "@hatch/platform";
import { newEvent } from "@hatch/contracts";
import { jetstreamManager } from "@nats-io/jetstream";
import { createEventLog, eventBucketName } from "../gateway/src/mcp/event-store.ts";
import { createSessionDirectory, sessionBucketName } from "../gateway/src/mcp/session-directory.ts";
import { TEST_SECRET } from "./support/hatch.ts";
import { hasNatsServer, startNatsCluster, type NatsCluster } from "./support/nats-cluster.ts";
import { collect, logLines, type Output } from "./support/processes.ts";
import { freePort, freshDatabase, uniqueName } from "./support/servers.ts";
import { startTcpProxy } from "./support/tcp-proxy.ts";

// Issue 25, items 1 and 2, on a real 3-node JetStream cluster (nats-server with cluster routes on loopback) this test
// starts and breaks: replicas, a killed leader under the rate counter, a NATS_URL list whose first server is down, a
// process started before NATS, a SIGTERM of a service copy under load, /readyz. No timing is asserted: each test's
// timeout only bounds a wait that would otherwise never end.

const ROOT = join(import.meta.dir, "..");

/** A logger whose lines the test reads. */
function capturedLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({ level: "info", write: (line) => lines.push(JSON.parse(line)) });
  return { logger, lines, has: (msg: string) => lines.some((line) => line.msg === msg) };
}

/**
 * Runs a first write to a stream or bucket, again while JetStream answers "no responders": right after a stream is
 * made (or its replicas change) on a cluster, the node this client is on may not know its subjects yet (the outbox
 * relay and the gateway's callers retry the same way).
 */
async function soon<T>(write: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (error) {
      if (attempt >= 50 || !/no responders|not enabled/i.test(String(error))) throw error;
      await Bun.sleep(100);
    }
  }
}

const publishEvent = (bus: NatsBus, summary: string) =>
  soon(() => eventStreamFor(bus).publish(newEvent("apps", null, { entity: "app", verb: "created", summary })));

async function replicasOf(bus: NatsBus, stream: string): Promise<number> {
  const jsm = await jetstreamManager(bus.connection);
  return (await jsm.streams.info(stream)).config.num_replicas;
}

function baseEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = { ...(process.env as Record<string, string>), ...extra };
  for (const name of ["DATABASE_URL", "NATS_URL", "HATCH_SECRET", "SHUTDOWN_TIMEOUT_MS", "HATCH_PARENT_PID"])
    if (!(name in extra)) delete env[name];
  return env;
}

describe.skipIf(!hasNatsServer)("NATS as a 3-node JetStream cluster", () => {
  let cluster: NatsCluster;
  const buses: Bus[] = [];
  const bus = async (options: {
    prefix: string;
    replicas?: number;
    url?: string;
    logger?: ReturnType<typeof createLogger>;
  }) => {
    const made = await createNatsBus({ url: options.url ?? cluster.url, ...options });
    buses.push(made);
    return made;
  };

  beforeAll(async () => {
    cluster = await startNatsCluster(3);
  }, 60_000);

  afterAll(async () => {
    for (const b of buses) await b.drain().catch(() => undefined);
    await cluster?.stop();
  });

  test("NATS_URL takes a comma list, and a list whose first server is down connects", async () => {
    const list = `nats://127.0.0.1:${freePort()},${cluster.nodes[1]!.url}`;
    expect(loadConfig(CommonEnvSchema, { NATS_URL: list }).NATS_URL).toBe(list);
    expect(() => loadConfig(CommonEnvSchema, { NATS_URL: "nats://a:4222,http://b:4222" })).toThrow(/NATS_URL/);
    const listed = await bus({ url: list, prefix: uniqueName("list") });
    listed.subscribe("ping", () => ({ data: "pong" }));
    await listed.flush();
    expect(new TextDecoder().decode((await listed.request("ping", "", { timeoutMs: 5_000 })).data)).toBe("pong");
  }, 30_000);

  test("with NATS_REPLICAS=3 the events stream and every bucket have 3 replicas; ones made with 1 are raised to 3", async () => {
    const prefix = uniqueName("replicas");
    const { logger, has } = capturedLogger();
    // First a process of an older deployment: one replica of each.
    const old = await bus({ prefix, replicas: 1 });
    await publishEvent(old, "made a1");
    await createRateCounter(old).take("k", 10, 60_000);
    const record = { user: "u", grant: "g", init: {}, choice: { groups: null, readOnly: false }, stream: false };
    await soon(() => createSessionDirectory(old, 60_000, logger).put("s1", record));
    const oldLog = createEventLog(old, logger);
    await soon(() => oldLog.append("s1", "get", { message: { jsonrpc: "2.0", method: "x" }, copy: "c" }));
    const streams = [
      eventsStreamName(prefix),
      `KV_hatch_rate_${prefix}`,
      `KV_${sessionBucketName(prefix)}`,
      `KV_${eventBucketName(prefix)}`,
    ];
    for (const stream of streams) expect(await replicasOf(old, stream)).toBe(1);

    // Then NATS_REPLICAS=3: each is brought to 3 replicas by the process that opens it.
    const raised = await bus({ prefix, replicas: 3 });
    await publishEvent(raised, "made a2");
    await createRateCounter(raised, undefined, undefined, logger).take("k", 10, 60_000);
    await createSessionDirectory(raised, 60_000, logger).get("s1");
    const raisedLog = createEventLog(raised, logger);
    await soon(() => raisedLog.append("s1", "get", { message: { jsonrpc: "2.0", method: "y" }, copy: "c" }));
    for (const stream of streams) expect(await replicasOf(raised, stream)).toBe(3);
    expect(has("JetStream replicas changed")).toBe(true);
  }, 60_000);

  test("killing the node that leads the rate bucket: every call completes, counted in the copy, and the degrade is logged", async () => {
    const prefix = uniqueName("ratekill");
    const { logger, lines } = capturedLogger();
    const gateway = await bus({ prefix, replicas: 3, logger });
    const counter = createRateCounter(gateway, undefined, undefined, logger) as KvRateCounter;
    const jsm = await jetstreamManager(gateway.connection);
    // Until the bucket is made and answers (on a fresh cluster a first write may find no responders for a moment).
    let leader: string | undefined;
    for (;;) {
      await counter.take("warm", 100, 60_000);
      leader = await jsm.streams.info(`KV_hatch_rate_${prefix}`).then(
        (info) => info.cluster?.leader,
        () => undefined,
      );
      if (leader && !counter.degraded) break;
      await Bun.sleep(200);
    }
    const before = lines.length;
    const since = (msg: string) => lines.slice(before).filter((line) => line.msg === msg);
    await cluster.node(leader!).kill();
    try {
      // 40 calls on fresh keys (a limit of 3 each): each answered, allowed, none waiting on the dead leader's answer.
      const decisions = await Promise.all(Array.from({ length: 40 }, (_, i) => counter.take(`user-${i}`, 3, 60_000)));
      expect(decisions.filter((d) => d.allowed)).toHaveLength(40);
      expect(since("rate counter degraded: the shared count does not answer; counting in this copy")).toHaveLength(1);
      // The limit still holds in this copy while degraded: the 4th call of one key in the window is refused.
      for (let i = 0; i < 3; i++) await counter.take("one-key", 3, 60_000);
      expect((await counter.take("one-key", 3, 60_000)).allowed).toBe(false);
      // The other two nodes elect a new leader; the counter finds the shared count again by itself.
      while (since("rate counter shared again").length === 0) {
        await counter.take("keep-going", 1_000_000, 60_000);
        await Bun.sleep(200);
      }
      expect(since("rate counter degraded: the shared count does not answer; counting in this copy")).toHaveLength(1);
    } finally {
      await cluster.node(leader!).restart();
      counter.close();
    }
  }, 90_000);
});

/** `bun src/main.ts` of the gateway or a service, its stdout collected. */
function startProcess(name: string, env: Record<string, string>): { child: Bun.Subprocess; out: Output } {
  const child = Bun.spawn([process.execPath, "src/main.ts"], {
    cwd: name === "gateway" ? join(ROOT, "gateway") : join(ROOT, "services", name),
    env: baseEnv({ HATCH_SECRET: TEST_SECRET, LOG_LEVEL: "info", ...env }),
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  return { child, out: collect(child.stdout as ReadableStream<Uint8Array>) };
}

describe.skipIf(!hasNatsServer || !process.env.TEST_DATABASE_URL)("copies that start and stop (real processes)", () => {
  let cluster: NatsCluster;
  let database: { url: string; drop(): Promise<void> };
  const children: Bun.Subprocess[] = [];
  const buses: Bus[] = [];

  beforeAll(async () => {
    cluster = await startNatsCluster(3);
    database = await freshDatabase(process.env.TEST_DATABASE_URL!);
  }, 60_000);

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
    for (const b of buses) await b.drain().catch(() => undefined);
    await cluster?.stop();
    await database?.drop();
  });

  test("a service started before NATS waits for it with a plain log line, then starts; its probes say so", async () => {
    const port = freePort();
    const metricsPort = freePort();
    const service = startProcess("domains", {
      NATS_URL: `nats://127.0.0.1:${port}`,
      DATABASE_URL: database.url,
      BUS_PREFIX: uniqueName("early"),
      METRICS_PORT: String(metricsPort),
    });
    const probe = async (path: string) => {
      const response = await fetch(`http://127.0.0.1:${metricsPort}${path}`);
      return { status: response.status, body: path === "/readyz" ? await response.json() : await response.text() };
    };
    children.push(service.child);
    await service.out.waitFor("waiting for NATS");
    const waiting = logLines(service.out, "waiting for NATS: no server answers yet; trying again")[0]!;
    expect(waiting).toMatchObject({ level: "warn", servers: `nats://127.0.0.1:${port}` });
    expect(service.child.exitCode).toBeNull();
    // Alive, not ready: no bus yet (the service's METRICS_PORT listener answers the probes, as the gateway's port does).
    expect(await probe("/livez")).toEqual({ status: 200, body: "ok\n" });
    expect(await probe("/readyz")).toEqual({
      status: 503,
      body: { ready: false, draining: false, bus: false, database: false },
    });
    const nats = Bun.spawn(["nats-server", "-a", "127.0.0.1", "-p", String(port)], {
      stdout: "ignore",
      stderr: "ignore",
    });
    try {
      await service.out.waitFor('"msg":"service ready"');
      expect(logLines(service.out, "connected to NATS")).toHaveLength(1);
      expect(await probe("/readyz")).toEqual({
        status: 200,
        body: { ready: true, draining: false, bus: true, database: true },
      });
      service.child.kill("SIGTERM");
      expect(await service.child.exited).toBe(0);
    } finally {
      nats.kill("SIGKILL");
      await nats.exited;
    }
  }, 90_000);

  test("SIGTERM of one of two service copies under load: no call is lost (drain)", async () => {
    const prefix = uniqueName("drain");
    // Each copy and the caller on its own node: calls cross the cluster's routes.
    const env = { DATABASE_URL: database.url, BUS_PREFIX: prefix, SHUTDOWN_TIMEOUT_MS: "20000" };
    const first = startProcess("domains", { ...env, NATS_URL: cluster.nodes[0]!.url });
    const second = startProcess("domains", { ...env, NATS_URL: cluster.nodes[1]!.url });
    children.push(first.child, second.child);
    await first.out.waitFor('"msg":"service ready"');
    await second.out.waitFor('"msg":"service ready"');
    const caller = await createNatsBus({ url: cluster.nodes[2]!.url, prefix });
    buses.push(caller);
    const outcomes = { ok: 0, lost: 0, other: 0 };
    let stopping = false;
    const call = async () => {
      try {
        const reply = decodeJson(
          (await caller.request("rpc.domains.health", encodeJson({ input: {} }), { timeoutMs: 8_000 })).data,
        ) as { ok?: boolean };
        if (reply.ok) outcomes.ok++;
        else outcomes.other++;
      } catch (error) {
        if (String(error).includes("timeout")) outcomes.lost++;
        else outcomes.other++;
      }
    };
    // 64 callers at once, each one call after another, until the first copy has stopped and 300 more calls are done.
    let afterStop = -1;
    const workers = Array.from({ length: 64 }, async () => {
      while (afterStop < 300) {
        await call();
        if (stopping && first.child.exitCode !== null) afterStop++;
      }
    });
    while (outcomes.ok < 600) await Bun.sleep(20);
    stopping = true;
    first.child.kill("SIGTERM");
    await Promise.all(workers);
    expect(await first.child.exited).toBe(0);
    // The stopping copy answered until NATS stopped routing to it; nothing it was sent went unanswered.
    expect(logLines(first.out, "shutdown step did not finish in its time; going on")).toEqual([]);
    expect(outcomes.lost).toBe(0);
    expect(outcomes.other).toBe(0);
    second.child.kill("SIGTERM");
    await second.child.exited;
  }, 120_000);

  test("/readyz: 503 while NATS or Postgres is away and while draining, /livez apart", async () => {
    // One server of its own behind the proxy (a cluster's client would reconnect to another node, around the proxy).
    const natsPort = freePort();
    const nats = Bun.spawn(
      [
        "nats-server",
        "-a",
        "127.0.0.1",
        "-p",
        String(natsPort),
        "-js",
        "-sd",
        mkdtempSync(join(tmpdir(), "hatch-nats-")),
      ],
      {
        stdout: "ignore",
        stderr: "pipe",
      },
    );
    await collect(nats.stderr as ReadableStream<Uint8Array>).waitFor("Server is ready");
    children.push(nats);
    const natsProxy = await startTcpProxy({ host: "127.0.0.1", port: natsPort });
    const pg = new URL(database.url);
    const pgProxy = await startTcpProxy({ host: pg.hostname, port: Number(pg.port || 5432) });
    pg.port = String(pgProxy.port);
    const port = freePort();
    const gateway = startProcess("gateway", {
      NATS_URL: `nats://127.0.0.1:${natsProxy.port}`,
      DATABASE_URL: pg.toString(),
      BUS_PREFIX: uniqueName("ready"),
      PORT: String(port),
      BASE_URL: `http://127.0.0.1:${port}`,
      SHUTDOWN_TIMEOUT_MS: "60000",
      DRAIN_DELAY_MS: "25000",
    });
    children.push(gateway.child);
    const base = `http://127.0.0.1:${port}`;
    const readyz = async () => {
      const response = await fetch(`${base}/readyz`);
      return { status: response.status, body: (await response.json()) as Record<string, boolean> };
    };
    const livez = async () => (await fetch(`${base}/livez`)).status;
    /** Polls /readyz until it answers `status` (the test's timeout bounds it). */
    const until = async (status: number) => {
      for (;;) {
        const answer = await readyz();
        if (answer.status === status) return answer;
        await Bun.sleep(100);
      }
    };
    try {
      await gateway.out.waitFor('"msg":"gateway ready"');
      expect(await readyz()).toEqual({
        status: 200,
        body: { ready: true, draining: false, bus: true, database: true },
      });
      expect(await livez()).toBe(200);

      await natsProxy.cut();
      expect((await until(503)).body).toMatchObject({ ready: false, bus: false, database: true });
      expect(await livez()).toBe(200);
      await natsProxy.restore();
      await until(200);

      await pgProxy.cut();
      expect((await until(503)).body).toMatchObject({ ready: false, bus: true, database: false });
      expect(await livez()).toBe(200);
      await pgProxy.restore();
      await until(200);

      // SIGTERM: still serving (DRAIN_DELAY_MS), but not ready, so a load balancer stops sending requests here.
      gateway.child.kill("SIGTERM");
      expect((await until(503)).body).toMatchObject({ ready: false, draining: true });
      expect(await livez()).toBe(200);
      expect(gateway.child.exitCode).toBeNull();
    } finally {
      if (gateway.child.exitCode === null) gateway.child.kill("SIGKILL");
      await gateway.child.exited;
      await natsProxy.close();
      await pgProxy.close();
      nats.kill("SIGKILL");
      await nats.exited;
    }
  }, 120_000);
});
