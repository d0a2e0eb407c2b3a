// `bun run reliability [--short]`: the cluster (gateway + four services as processes) on a private nats-server and a
// private Postgres, a mixed load from several users, and while it runs one fault after another: each process killed
// (SIGKILL) and started again, nats-server killed and started again, Postgres stopped at once and started again.
// Then the database is checked against every acknowledged write, a schema-driven fuzz run, and the isolation matrix.
// Figures: bench/results/reliability.json; exit code 1 when a goal is missed (see docs/operating.md "Reliability").
import { createAuth, GATEWAY_MIGRATIONS, loadGatewayConfig } from "@hatch/gateway";
import { createLogger, openServiceDatabase } from "@hatch/platform";
import { randomBytes } from "node:crypto";
import { cpSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runAdminCommand } from "../../scripts/admin-commands.ts";
import { startCluster, type Cluster } from "../../scripts/cluster-lib.ts";
import { runFuzz, type FuzzReport } from "./fuzz.ts";
import { freePort, makeWorkdir, privateNats, privatePostgres, type Server } from "./infra.ts";
import { runIsolation, type IsolationReport } from "./isolation.ts";
import { appFiles, CallLog, startLoad, type CallRecord, type LoadUser } from "./load.ts";
import { answeredNotImplemented, connectCaller, type Caller } from "./mcp.ts";
import { checkIntegrity, waitForActivity, type Integrity, type Problem } from "./verify.ts";

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
/** A read tool answered by each process, for the recovery probe. */
const PROBE: Record<string, { tool: string; args: (u: LoadUser) => Record<string, unknown> }> = {
  orgs: { tool: "whoami", args: () => ({}) },
  apps: { tool: "list_tools", args: () => ({}) },
  // The probe user owns no app (custom_domains would be not_found for it): its own bought domains, none, answer ok.
  domains: { tool: "domain_status", args: () => ({}) },
  billing: { tool: "billing", args: () => ({}) },
  gateway: { tool: "whoami", args: () => ({}) },
  nats: { tool: "list_tools", args: () => ({}) },
  postgres: { tool: "whoami", args: () => ({}) },
};

interface Window {
  fault: string;
  /** Processes that exited on their own during the window (a crash), restarted by the run as an orchestrator would. */
  crashes: string[];
  start: number;
  end: number;
  injectedAt?: number;
  restoredAt?: number;
  recoveredAt?: number;
}

interface WindowFigures {
  fault: string;
  calls: number;
  ok: number;
  failedClear: number;
  failedUnclear: number;
  /** No answer at all (connection refused, session gone with the gateway, 5xx). */
  failedTransport: number;
  hung: number;
  writesLost: number;
  writesDoubled: number;
  activityLost: number;
  activityDoubled: number;
  /** How long the component was down on purpose (a killed process is started again at once). */
  downMs: number | null;
  /** From the fault to the first successful call that needs the faulted component. */
  recoverMs: number | null;
  /** Examples of unclear answers, for the report. */
  unclear: string[];
  /** The most frequent failure texts in the window, with counts. */
  errors: string[];
  /** Processes that exited by themselves during the window. */
  crashes: string[];
  /** Each hung call: what, by whom, when (seconds after the fault), how long it was waited for. */
  hungCalls: string[];
}

const runId = randomBytes(3).toString("hex");
const work = makeWorkdir();
const log = (line: string) => process.stdout.write(`${line}\n`);
let cluster: Cluster | null = null;
let nats: Server | null = null;
let postgres: Server | null = null;
const callers: Caller[] = [];
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
  // The load is the point, not plan limits or rate limits: both are lifted for this run's processes.
  Object.assign(process.env, {
    BILLING_ENFORCE_LIMITS: "false",
    TOOL_CALLS_PER_MINUTE_PER_GRANT: "1000000",
    TOOL_CALLS_PER_MINUTE_PER_USER: "1000000",
    DATA_REQUESTS_PER_MINUTE: "1000000",
  });
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

  // Users the operator's way: the admin commands (user:create, token:issue) on the run's database.
  const config = loadGatewayConfig({ PORT: String(port) }, secret);
  const database = await openServiceDatabase(
    { kind: "postgres", url: postgres.url, maxConnections: 2 },
    { schema: "gateway", migrationsFolder: GATEWAY_MIGRATIONS },
  );
  const logger = createLogger({ level: "warn" });
  const auth = createAuth({ config, db: database.db, logger });
  async function newUser(
    label: string,
    options: { confirm?: boolean } = {},
  ): Promise<{ email: string; token: string; caller: Caller }> {
    const email = `${label}-${runId}@reliability.test`;
    const created = await runAdminCommand(
      auth,
      config.mcpUrl,
      { command: "user:create", email, password: "reliability pass 1", name: `Rel ${label}` },
      logger,
    );
    if (!created.ok) throw new Error(created.message);
    const issued = await runAdminCommand(
      auth,
      config.mcpUrl,
      { command: "token:issue", email, readOnly: false },
      logger,
    );
    if (!issued.ok) throw new Error(issued.message);
    const caller = connectCaller(mcpUrl, issued.stdout.trim(), label, options);
    callers.push(caller);
    return { email, token: issued.stdout.trim(), caller };
  }
  const must = async (caller: Caller, tool: string, args: Record<string, unknown>) => {
    const outcome = await caller.call(tool, args);
    if (outcome.kind !== "ok")
      throw new Error(`setup ${tool} failed: ${outcome.kind} ${"text" in outcome ? outcome.text : ""}`);
    return outcome.data;
  };

  const users: LoadUser[] = [];
  for (let i = 1; i <= S.users; i++) {
    const { email, caller } = await newUser(`user${i}`);
    const org = (await must(caller, "org_setup", { action: "create", name: `Rel Org ${runId} ${i}` })) as {
      org: { id: string };
    };
    const appName = `Rel App ${runId} ${i}`;
    const published = await must(caller, "publish", { name: appName, visibility: "public", files: appFiles("v1") });
    users.push({
      label: `user${i}`,
      email,
      caller,
      orgId: org.org.id,
      address: published.address as string,
      appName,
      ackedVersions: [{ version: published.version as number, at: Date.now() }],
      publishAttempts: 1,
      ackedShares: [],
      shareAttempts: [],
      ackedInvitations: [],
      inviteAttempts: [],
      rollbacksAcked: 0,
      rollbackAttempts: 0,
      ackedDocs: [],
      docAttempts: 0,
    });
  }
  const probeUser = await newUser("probe");
  log(`${users.length} users, each in an organization with a public app; load running`);

  const calls = new CallLog();
  const appHost = (address: string) => `http://${address}.localhost:${appPort}`;
  const load = startLoad(users, { appHost, log: calls, pauseMs: S.pauseMs, maxCallsPerWorker: S.maxCalls, runId });
  stopLoad = load.stop;

  const windows: Window[] = [];
  const open = (fault: string): Window => {
    const now = Date.now();
    const previous = windows.at(-1);
    if (previous) previous.end = now;
    const w: Window = { fault, start: now, end: Number.POSITIVE_INFINITY, crashes: [] };
    windows.push(w);
    return w;
  };

  // A process that exits by itself (not killed by the run) is a crash: noted in the window, started again.
  let killing: string | null = null;
  monitor = setInterval(() => {
    for (const [name, child] of cluster!.processes) {
      if (name === killing || (child.exitCode === null && child.signalCode === null)) continue;
      windows.at(-1)?.crashes.push(`${name} exited by itself (${child.exitCode ?? child.signalCode})`);
      log(`  ${name} exited by itself (${child.exitCode ?? child.signalCode}): started again`);
      cluster!.respawn(name);
    }
  }, 250);

  open("none (baseline)");
  await Bun.sleep(S.baselineMs);

  /** Calls the probe tool until it answers; the first success after `since` is the recovery. */
  async function waitRecovered(component: string, since: number): Promise<number | undefined> {
    const probe = PROBE[component]!;
    const deadline = since + S.recoverTimeoutMs;
    while (Date.now() < deadline) {
      const start = Date.now();
      const outcome = await probeUser.caller.call(probe.tool, probe.args(users[0]!));
      const answered = outcome.kind === "ok" || answeredNotImplemented(outcome);
      calls.add({
        start,
        end: Date.now(),
        user: "probe",
        op: probe.tool,
        service: component,
        kind: answered ? "ok" : outcome.kind,
        clear: outcome.kind === "tool_error" ? outcome.clear : undefined,
        text: "text" in outcome ? outcome.text.slice(0, 300) : undefined,
      });
      if (answered) return Date.now();
      await Bun.sleep(100);
    }
    return undefined;
  }

  for (const name of [...SERVICES, "gateway"].filter(wanted)) {
    const w = open(`kill ${name}`);
    const child = cluster.processes.get(name)!;
    w.injectedAt = Date.now();
    killing = name;
    child.kill("SIGKILL");
    await child.exited;
    cluster.respawn(name);
    killing = null;
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
    const w = open(`restart ${name === "nats" ? "nats-server" : "Postgres"}`);
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
  open("after the faults");
  await Bun.sleep(S.settleMs);
  await load.stop();
  stopLoad = null;
  windows.at(-1)!.end = Date.now();

  const caughtUp = await waitForActivity(postgres.url, 60_000);
  if (!caughtUp) log("  the outboxes did not empty within 60 s: activity may be counted as lost");
  const integrity = await checkIntegrity(postgres.url, users);

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
  await database.close();

  const figures = windows.map((w) => figuresOf(w, calls, integrity.problems));
  const unplaced = integrity.problems.filter(
    (p) => p.at === null || !windows.some((w) => p.at! >= w.start && p.at! < w.end),
  );
  const totals = totalsOf(figures);
  const result = {
    mode: short ? "short" : "full",
    ranAt: new Date(started).toISOString(),
    seconds: Math.round((Date.now() - started) / 1000),
    settings: S,
    users: users.length,
    faults: figures,
    totals,
    integrity: { ...integrity, unplaced: unplaced.map((p) => `${p.kind}: ${p.text}`) },
    fuzz,
    isolation,
  };
  printTable(figures, totals, integrity, fuzz, isolation);

  const misses: string[] = [];
  if (totals.hung > 0) misses.push(`${totals.hung} calls hung`);
  if (integrity.writesLost + integrity.writesDoubled > 0)
    misses.push(`${integrity.writesLost} writes lost, ${integrity.writesDoubled} doubled`);
  if (integrity.activityLost + integrity.activityDoubled > 0)
    misses.push(`${integrity.activityLost} activity entries lost, ${integrity.activityDoubled} doubled`);
  for (const w of windows) if (w.injectedAt && !w.recoveredAt) misses.push(`no recovery after ${w.fault}`);
  for (const w of windows) for (const crash of w.crashes) misses.push(`during ${w.fault}: ${crash}`);
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

function figuresOf(w: Window, calls: CallLog, problems: Problem[]): WindowFigures {
  const mine = calls.records.filter((r) => r.start >= w.start && r.start < w.end);
  const inWindow = problems.filter((p) => p.at !== null && p.at >= w.start && p.at < w.end);
  const count = (kind: Problem["kind"]) => inWindow.filter((p) => p.kind === kind).length;
  const unclear = mine.filter((r) => r.kind === "tool_error" && !r.clear);
  return {
    fault: w.fault,
    calls: mine.length,
    ok: mine.filter((r) => r.kind === "ok").length,
    failedClear: mine.filter((r) => r.kind === "tool_error" && r.clear).length,
    failedUnclear: unclear.length,
    failedTransport: mine.filter((r) => r.kind === "transport").length,
    hung: mine.filter((r) => r.kind === "hung").length,
    writesLost: count("writeLost"),
    writesDoubled: count("writeDoubled"),
    activityLost: count("activityLost"),
    activityDoubled: count("activityDoubled"),
    downMs: w.injectedAt && w.restoredAt ? w.restoredAt - w.injectedAt : null,
    recoverMs: w.injectedAt && w.recoveredAt ? w.recoveredAt - w.injectedAt : null,
    unclear: [...new Set(unclear.map((r) => `${r.op}: ${r.text}`))].slice(0, 5),
    errors: topErrors(mine),
    crashes: w.crashes,
    hungCalls: mine
      .filter((r) => r.kind === "hung")
      .map(
        (r) =>
          `${r.op} by ${r.user}, started ${((r.start - (w.injectedAt ?? w.start)) / 1000).toFixed(1)} s after the fault, given up after ${((r.end - r.start) / 1000).toFixed(1)} s`,
      ),
  };
}

function topErrors(records: CallRecord[]): string[] {
  const counts = new Map<string, number>();
  for (const r of records) {
    if (r.kind === "ok") continue;
    // Ids and numbers vary from call to call; the rest says what kind of failure it was.
    const key = `${r.op} ${r.kind}: ${(r.text ?? "").replace(/[0-9a-f]{8,}|(?<!HTTP )\b\d+\b/g, "#").slice(0, 160)}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 6)
    .map(([k, n]) => `${n}× ${k}`);
}

function totalsOf(figures: WindowFigures[]) {
  const sum = (key: keyof WindowFigures) => figures.reduce((n, f) => n + ((f[key] as number) ?? 0), 0);
  return {
    calls: sum("calls"),
    ok: sum("ok"),
    failedClear: sum("failedClear"),
    failedUnclear: sum("failedUnclear"),
    failedTransport: sum("failedTransport"),
    hung: sum("hung"),
  };
}

function printTable(
  figures: WindowFigures[],
  totals: ReturnType<typeof totalsOf>,
  integrity: Integrity,
  fuzz: FuzzReport,
  isolation: IsolationReport,
) {
  const head = [
    "fault",
    "calls",
    "ok",
    "failed clear",
    "failed unclear",
    "no answer",
    "hung",
    "writes lost/doubled",
    "activity lost/doubled",
    "down s",
    "recover s",
  ];
  const rows = figures.map((f) => [
    f.fault,
    f.calls,
    f.ok,
    f.failedClear,
    f.failedUnclear,
    f.failedTransport,
    f.hung,
    `${f.writesLost}/${f.writesDoubled}`,
    `${f.activityLost}/${f.activityDoubled}`,
    f.downMs === null ? "" : (f.downMs / 1000).toFixed(1),
    f.recoverMs === null ? "" : (f.recoverMs / 1000).toFixed(1),
  ]);
  rows.push([
    "total",
    totals.calls,
    totals.ok,
    totals.failedClear,
    totals.failedUnclear,
    totals.failedTransport,
    totals.hung,
    `${integrity.writesLost}/${integrity.writesDoubled}`,
    `${integrity.activityLost}/${integrity.activityDoubled}`,
    "",
    "",
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells: (string | number)[]) =>
    cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]!) : String(c).padStart(widths[i]!))).join("  ");
  log("");
  log(line(head));
  for (const row of rows) log(line(row));
  log(
    `acknowledged writes checked: ${integrity.acknowledgedWrites}; committed without an answer: ${integrity.committedWithoutAnswer}`,
  );
  for (const p of integrity.problems.slice(0, 20)) log(`  ${p.kind}: ${p.text}`);
  for (const f of figures)
    for (const e of f.errors) log(`  during ${f.fault}: ${e.replace(/\s+/g, " ").slice(0, 200)}`);
  for (const f of figures) for (const h of f.hungCalls) log(`  HUNG during ${f.fault}: ${h}`);
  for (const f of figures) for (const c of f.crashes) log(`  CRASH during ${f.fault}: ${c}`);
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

/** On a failed run the processes' logs are copied out of the work folder (which is removed) for a look. */
function keepLogs() {
  const to = join(tmpdir(), `hatch-reliability-logs-${runId}`);
  try {
    cpSync(join(work.dir, "logs"), to, { recursive: true });
    for (const name of readdirSync(work.dir)) if (name.endsWith(".log")) cpSync(join(work.dir, name), join(to, name));
    log(`logs of the processes: ${to}`);
  } catch {}
}

let code = 1;
try {
  code = await main();
} catch (error) {
  log(`reliability failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
} finally {
  clearTimeout(watchdog);
  if (code !== 0) keepLogs();
  await cleanup();
}
process.exit(code);
