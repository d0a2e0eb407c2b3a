import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";

/** Real servers are used when CI (or a developer) sets these; otherwise tests run on the embedded default. */
export const realServers =
  process.env.TEST_DATABASE_URL && process.env.TEST_NATS_URL
    ? { databaseUrl: process.env.TEST_DATABASE_URL, natsUrl: process.env.TEST_NATS_URL }
    : null;

export type Mode = "embedded" | "real";
/**
 * Which modes a suite runs in. The rule: a suite whose outcome can depend on the bus or the database runs in both
 * (MODES: always embedded, and real when the servers are given); that is any suite about SQL, transactions, locks or
 * limits under concurrency, NATS semantics (queues, key-value, JetStream, message size, several copies or processes),
 * events, jobs and outbox delivery, a server going away, security (permissions, secrets, sessions, confirmations,
 * sign-in) or tracing across the bus. A suite about what HTTP, a page or a tool's text says, where the bus and the
 * database only carry the call, runs embedded only (EMBEDDED_MODES). When unsure, MODES.
 */
export const MODES: Mode[] = realServers ? ["embedded", "real"] : ["embedded"];
/** Suites about HTTP, pages and tool text (see MODES for the rule): the embedded default only. */
export const EMBEDDED_MODES: Mode[] = ["embedded"];

const endOfRun: (() => Promise<void>)[] = [];
/** Runs `step` once after every test file of this `bun test` process (test/preload.ts's afterAll). */
export function atEndOfRun(step: () => Promise<void>): void {
  if (!endOfRun.includes(step)) endOfRun.push(step);
}
export async function endRun(): Promise<void> {
  for (const step of endOfRun.splice(0)) await step().catch(() => {});
}

let sequence = 0;
/** A name no other run or test file uses: run id + process + counter. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${process.env.HATCH_TEST_RUN}_${process.pid}_${++sequence}`
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, "_");
}

/** A fresh database on the test Postgres server, dropped by `drop()`. */
export async function freshDatabase(serverUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = uniqueName("hatch");
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${name}"`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const again = postgres(serverUrl, { max: 1, onnotice: () => {} });
      await again.unsafe(`drop database if exists "${name}" with (force)`);
      await again.end();
    },
  };
}

/** A TCP port that was free a moment ago (the base URL must be known before the gateway starts). */
export function freePort(): number {
  // Below the kernel's ephemeral range (32768 and up here): a port the kernel hands out for port 0 is also what an
  // outgoing connection (to Postgres, NATS, another test server) may take as its local port before the test's server
  // listens on it, and a second process (CI's conformance run beside the tests) probes the same range. A port is
  // handed out once per process.
  for (;;) {
    const port = PORT_FLOOR + Math.floor(Math.random() * (PORT_CEILING - PORT_FLOOR));
    if (handedOut.has(port)) continue;
    try {
      const probe = Bun.serve({ port, hostname: "127.0.0.1", fetch: () => new Response() });
      probe.stop(true);
    } catch {
      continue;
    }
    handedOut.add(port);
    return port;
  }
}
const PORT_FLOOR = 20_000;
const PORT_CEILING = 32_000;
const handedOut = new Set<number>();

/** A fresh folder for the apps service's files, removed at the end of the run. */
export function testBlobDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "hatch-blobs-"));
  // At the end of the run (an exit handler never runs under `bun test`, which left one folder a boot behind).
  atEndOfRun(async () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
