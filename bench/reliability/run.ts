// `bun run reliability [--short]`: the cluster (gateway + four services as processes) on a private nats-server and a
// private Postgres, a mixed load from several users, and while it runs one fault after another: each process killed
// (SIGKILL) and started again, nats-server killed and started again, Postgres stopped at once and started again.
// Then the database is checked against every acknowledged write, a schema-driven fuzz run, and the isolation matrix.
// Figures: bench/results/reliability.json; exit code 1 when a goal is missed (see docs/operating.md "Reliability").
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startCluster, type Cluster } from "../../scripts/cluster-lib.ts";
import { runFuzz, type FuzzReport } from "./fuzz.ts";
import { freePort, keepLogs, LOAD_ENV, makeWorkdir, privateNats, privatePostgres, type Server } from "./infra.ts";
import { runIsolation, type IsolationReport } from "./isolation.ts";
import { appFiles, CallLog, startLoad } from "./load.ts";
import type { Caller } from "./mcp.ts";
import { makeLoadUsers, openUsers } from "./users.ts";
import { checkIntegrity, waitForActivity, type Integrity } from "./verify.ts";
import {
  commonMisses,
  figuresOf,
  printWindows,
  probeUntilAnswered,
  totalsOf,
  unplacedProblems,
  watchCrashes,
  Windows,
  type Totals,
  type WindowFigures,
} from "./windows.ts";

if (process.argv.includes("--scale")) {
  // `bun run reliability --scale [--short]`: the scale-out form (bench/reliability/scale.ts).
  const { runScale } = await import("./scale.ts");
  process.exit(await runScale());
}

const ROOT = join(import.meta.dir, "..", "..");
const short = process.argv.includes("--short");
const S = short
  ? {
      users: 3,
      downMs: 1_500,
      settleMs: 2_500,
      baselineMs: 3_000,
      pauseMs: 150,
      maxCalls: 600,
      recoverTimeoutMs: 45_000,
      watchdogMs: 270_000,
    }
  : {
      users: 5,
      downMs: 5_000,
      settleMs: 8_000,
      baselineMs: 8_000,
      pauseMs: 60,
      maxCalls: 20_000,
      recoverTimeoutMs: 90_000,
      watchdogMs: 900_000,
    };
const SERVICES = ["orgs", "apps", "domains", "billing"] as const;
/** `--faults=domains,nats`: only these faults (processes by name, nats, postgres); default all. */
const onlyFaults = process.argv
  .find((a) => a.startsWith("--faults="))
  ?.slice("--faults=".length)
  .split(",");
const wanted = (fault: string) => !onlyFaults || onlyFaults.includes(fault);
const runId = randomBytes(3).toString("hex");
const work = makeWorkdir();
const log = (line: string) => process.stdout.write(`${line}\n`);
let cluster: Cluster | null = null;
let nats: Server | null = null;
let postgres: Server | null = null;
let callers: Caller[] = [];
let stopLoad: (() => Promise<void>) | null = null;
let cleaning: Promise<void> | null = null;
let monitor: ReturnType<typeof setInterval> | undefined;

function cleanup(): Promise<void> {
  clearInterval(monitor);
  cleaning ??= (async () => {
    await stopLoad?.().catch(() => {});
    await Promise.all(callers.map((c) => c.close()));
    await cluster?.stop().catch(() => cluster?.kill());
    await nats?.stop("SIGTERM").catch(() => {});
    await postgres?.stop("SIGINT").catch(() => {});
    work.remove();
  })();
  return cleaning;
}

const watchdog = setTimeout(() => {
  log(`reliability: stopped by its watchdog after ${S.watchdogMs / 1000} s`);
  cluster?.kill();
  void cleanup().finally(() => process.exit(1));
}, S.watchdogMs);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    log(`reliability: ${signal}, cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}

async function main(): Promise<number> {
  const started = Date.now();
  log(`reliability (${short ? "short" : "full"}): private Postgres and nats-server in ${work.dir}`);
  [postgres, nats] = await Promise.all([privatePostgres(work), privateNats(work)]);
  const port = await freePort();
  const appPort = await freePort();
  const secret = randomBytes(32).toString("hex");
  const logDir = join(work.dir, "logs");
  mkdirSync(logDir);
  Object.assign(process.env, LOAD_ENV);
  cluster = await startCluster({
    natsUrl: nats.url,
    databaseUrl: postgres.url,
    secret,
    busPrefix: `rel${runId}`,
    port,
    appPort,
    blobDir: join(work.dir, "blobs"),
    logLevel: process.env.RELIABILITY_LOG_LEVEL ?? "warn",
    logDir,
    shutdownTimeoutMs: 5_000,
  });
  const mcpUrl = `${cluster.baseUrl}/mcp`;
  log(`cluster up in ${((Date.now() - started) / 1000).toFixed(1)} s: ${mcpUrl}`);

  const users = await openUsers({
    databaseUrl: postgres.url,
    secret,
    gatewayEnv: { PORT: String(port) },
    mcpUrl,
    runId,
  });
  callers = users.callers;
  const { newUser, must } = users;
  const loadUsers = await makeLoadUsers(users, S.users, runId);
  const probeUser = await newUser("probe");
  log(`${loadUsers.length} users, each in an organization with a public app; load running`);

  const calls = new CallLog();
  const appHost = (address: string) => `http://${address}.localhost:${appPort}`;
  const load = startLoad(loadUsers, { appHost, log: calls, pauseMs: S.pauseMs, maxCallsPerWorker: S.maxCalls, runId });
  stopLoad = load.stop;

  const windows = new Windows();
  // A process that exits by itself (not killed by the run) is a crash: noted in the window, started again.
  const killing = new Set<string>();
  monitor = watchCrashes(cluster, windows, () => killing, log);

  windows.open("none (baseline)");
  await Bun.sleep(S.baselineMs);

  /** Calls the probe tool until it answers; the first success after `since` is the recovery. */
  const waitRecovered = (component: string, since: number) =>
    probeUntilAnswered(probeUser.caller, component, calls, since + S.recoverTimeoutMs);

  for (const name of [...SERVICES, "gateway"].filter(wanted)) {
    const w = windows.open(`kill ${name}`);
    const child = cluster.processes.get(name)!;
    w.injectedAt = Date.now();
    killing.add(name);
    child.kill("SIGKILL");
    await child.exited;
    cluster.respawn(name);
    killing.delete(name);
    w.restoredAt = Date.now();
    w.recoveredAt = await waitRecovered(name, w.injectedAt);
    const now = cluster.processes.get(name)!;
    if (now.exitCode !== null) log(`  ${name} exited with code ${now.exitCode} after its restart`);
    log(
      `  kill ${name}: ${w.recoveredAt ? `answered again after ${((w.recoveredAt - w.injectedAt) / 1000).toFixed(1)} s` : "NOT RECOVERED"}`,
    );
    await Bun.sleep(S.settleMs);
  }
  for (const [name, server, signal] of [
    ["nats", nats, "SIGKILL"],
    ["postgres", postgres, "SIGQUIT"],
  ] as const) {
    if (!wanted(name)) continue;
    const w = windows.open(`restart ${name === "nats" ? "nats-server" : "Postgres"}`);
    w.injectedAt = Date.now();
    await server.stop(signal);
    await Bun.sleep(S.downMs);
    await server.start();
    w.restoredAt = Date.now();
    w.recoveredAt = await waitRecovered(name, w.injectedAt);
    log(
      `  restart ${name}: ${w.recoveredAt ? `answered again ${((w.recoveredAt - w.restoredAt) / 1000).toFixed(1)} s after it was back` : "NOT RECOVERED"}`,
    );
    await Bun.sleep(S.settleMs);
  }
  windows.open("after the faults");
  await Bun.sleep(S.settleMs);
  await load.stop();
  stopLoad = null;
  windows.close();

  const caughtUp = await waitForActivity(postgres.url, nats.url, 60_000);
  if (!caughtUp) log("  the outboxes or event consumers did not empty within 60 s: activity may be counted as lost");
  const integrity = await checkIntegrity(postgres.url, loadUsers);

  log("fuzz: malformed JSON-RPC and tool arguments from each tool's schema");
  const fuzzUser = await newUser("fuzz", { confirm: false });
  const fuzzApp = await must(fuzzUser.caller, "publish", {
    name: `Fuzz App ${runId}`,
    visibility: "private",
    files: appFiles("fuzz"),
  });
  const gateway = () => {
    const child = cluster!.processes.get("gateway")!;
    return child.exitCode === null && child.signalCode === null;
  };
  const fuzz = await runFuzz({
    mcpUrl,
    token: fuzzUser.token,
    caller: fuzzUser.caller,
    address: fuzzApp.address as string,
    email: fuzzUser.email,
    alive: gateway,
  });
  log("isolation: a second user calls every tool with the first user's addresses, invitation ids and emails");
  const isolation = await runIsolation({ newUser, must, appHost, runId, mcpUrl });
  clearInterval(monitor);
  await users.close();

  const figures = windows.list.map((w) => figuresOf(w, calls, integrity.problems));
  const totals = totalsOf(figures);
  const result = {
    mode: short ? "short" : "full",
    ranAt: new Date(started).toISOString(),
    seconds: Math.round((Date.now() - started) / 1000),
    settings: S,
    users: loadUsers.length,
    faults: figures,
    totals,
    integrity: { ...integrity, unplaced: unplacedProblems(integrity.problems, windows.list) },
    fuzz,
    isolation,
  };
  printTable(figures, totals, integrity, fuzz, isolation);

  const misses = commonMisses(totals, integrity, windows.list);
  for (const w of windows.list) if (w.injectedAt && !w.recoveredAt) misses.push(`no recovery after ${w.fault}`);
  if (fuzz.crashes + fuzz.http5xx + fuzz.internal > 0)
    misses.push(`fuzz: ${fuzz.crashes} crashes, ${fuzz.http5xx} 5xx, ${fuzz.internal} internal errors`);
  if (isolation.leaks.length > 0)
    misses.push(`isolation: ${isolation.leaks.length} answers show the first user's data`);
  const resultsDir = join(ROOT, "bench", "results");
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(
    join(resultsDir, "reliability.json"),
    `${JSON.stringify({ ...result, goalsMissed: misses }, null, 2)}\n`,
  );
  log(`\nfigures: bench/results/reliability.json (${result.seconds} s)`);
  log(misses.length ? `reliability: goals missed: ${misses.join("; ")}` : "reliability: every goal met");
  return misses.length ? 1 : 0;
}

function printTable(
  figures: WindowFigures[],
  totals: Totals,
  integrity: Integrity,
  fuzz: FuzzReport,
  isolation: IsolationReport,
) {
  printWindows(log, figures, totals, integrity);
  log(
    `fuzz: ${fuzz.cases} cases over ${fuzz.tools} tools and the JSON-RPC envelope; ${fuzz.crashes} crashes, ${fuzz.http5xx} 5xx, ${fuzz.internal} internal errors, ${fuzz.unclear.length} errors that do not name what to fix`,
  );
  for (const f of [...fuzz.failures.slice(0, 10), ...fuzz.findings])
    log(`  fuzz: ${f.replace(/\s+/g, " ").slice(0, 240)}`);
  for (const u of fuzz.unclear.slice(0, 10)) log(`  fuzz unclear: ${u}`);
  log(
    `isolation: ${isolation.calls} calls by a second user with the first user's identifiers; ${isolation.leaks.length} leaks`,
  );
  for (const leak of isolation.leaks.slice(0, 10)) log(`  leak: ${leak}`);
}

let code = 1;
try {
  code = await main();
} catch (error) {
  log(`reliability failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
} finally {
  clearTimeout(watchdog);
  if (code !== 0) keepLogs(work, runId, log);
  await cleanup();
}
process.exit(code);
