import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXIT_CODES } from "@hatch/platform";
import { allGone, collect, isAlive, logLines } from "./support/processes.ts";
import { TEST_SECRET } from "./support/hatch.ts";
import { freePort, freshDatabase, uniqueName } from "./support/servers.ts";
import { migratedDataDir } from "./support/templates.ts";

// Bounded shutdown, seen from outside: real processes, real signals. No timing is asserted; each test's timeout is
// only the bound past which a process that never exits fails it.

const ROOT = join(import.meta.dir, "..");
const FIXTURE = join(import.meta.dir, "fixtures/shutdown/steps.ts");
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function baseEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = { ...(process.env as Record<string, string>), ...extra };
  for (const name of ["DATABASE_URL", "NATS_URL", "HATCH_SECRET", "SHUTDOWN_TIMEOUT_MS", "HATCH_PARENT_PID"])
    if (!(name in extra)) delete env[name];
  return env;
}

function startFixture(extra: Record<string, string>) {
  const child = Bun.spawn([process.execPath, FIXTURE], {
    cwd: ROOT,
    env: baseEnv(extra),
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  return { child, out: collect(child.stdout), err: collect(child.stderr) };
}

describe("the shared shutdown, in a real process", () => {
  test("SIGTERM runs every step, then exits 0", async () => {
    const { child, out } = startFixture({ STEPS: "quick" });
    await out.waitFor("ready");
    child.kill("SIGTERM");
    expect(await child.exited).toBe(EXIT_CODES.clean);
    await out.ended;
    expect(logLines(out, "quick step ran")).toHaveLength(1);
    expect(logLines(out, "last step ran")).toHaveLength(1);
    expect(logLines(out, "shutting down")[0]).toMatchObject({ reason: "SIGTERM", timeoutMs: 10_000 });
  }, 20_000);

  test("a step that never ends: the deadline exits with code 1 and names the step", async () => {
    const { child, out } = startFixture({ STEPS: "hang", SHUTDOWN_TIMEOUT_MS: "300" });
    await out.waitFor("ready");
    child.kill("SIGINT");
    expect(await child.exited).toBe(EXIT_CODES.deadline);
    await out.ended;
    expect(logLines(out, "shutdown deadline passed: exiting with work unfinished")[0]).toMatchObject({
      level: "error",
      step: "step that never ends",
      timeoutMs: 300,
    });
    expect(logLines(out, "last step ran")).toHaveLength(0);
  }, 20_000);

  test("a second signal exits at once, whatever the deadline", async () => {
    const { child, out } = startFixture({ STEPS: "hang", SHUTDOWN_TIMEOUT_MS: "600000" });
    await out.waitFor("ready");
    child.kill("SIGTERM");
    await out.waitFor('"msg":"shutting down"');
    child.kill("SIGINT");
    expect(await child.exited).toBe(EXIT_CODES.SIGINT);
    await out.ended;
    expect(logLines(out, "second signal: exiting at once")[0]).toMatchObject({
      reason: "SIGINT",
      step: "step that never ends",
    });
  }, 20_000);

  test.each([
    ["abc", "must be a number of milliseconds"],
    ["1.5", "must be a whole number of milliseconds"],
    ["50", "must be at least 100"],
    ["600001", "must be at most 600000"],
  ])(
    "SHUTDOWN_TIMEOUT_MS=%p is refused at start: %s",
    async (value, message) => {
      const { child, err } = startFixture({ SHUTDOWN_TIMEOUT_MS: value });
      expect(await child.exited).toBe(2);
      await err.ended;
      expect(err.text).toContain(`SHUTDOWN_TIMEOUT_MS: ${message}`);
    },
    20_000,
  );

  test("a process whose launcher is killed stops itself (HATCH_PARENT_PID)", async () => {
    // bash stands in for the launcher: it runs the fixture as its child, tells it its own pid, and is killed hard.
    const launcher = Bun.spawn(
      ["bash", "-c", `HATCH_PARENT_PID=$$ ${JSON.stringify(process.execPath)} ${JSON.stringify(FIXTURE)}; true`],
      {
        cwd: ROOT,
        env: baseEnv({ STEPS: "quick" }),
        stdout: "pipe",
        stderr: "pipe",
        stdin: "ignore",
      },
    );
    const out = collect(launcher.stdout);
    await out.waitFor("ready pid=");
    const pid = Number(/ready pid=(\d+)/.exec(out.text)![1]);
    expect(isAlive(pid)).toBe(true);
    launcher.kill("SIGKILL");
    await launcher.exited;
    await out.ended; // the fixture holds the pipe until it exits
    await allGone([pid]);
    expect(logLines(out, "shutting down")[0]).toMatchObject({ reason: "parent process exited" });
    expect(logLines(out, "stopped")).toHaveLength(1);
  }, 20_000);
});

/**
 * `bun run dev` with one user (made by the admin CLI first) and that user's token, on a data dir whose database is
 * migrated already (a first start is not what these tests are about).
 */
async function startDevWithUser(email: string, extra: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "hatch-shutdown-"));
  dirs.push(dataDir);
  await migratedDataDir(dataDir);
  const port = freePort();
  const env = baseEnv({
    DATA_DIR: dataDir,
    PORT: String(port),
    APP_PORT: String(freePort()),
    LOG_LEVEL: "info",
    ...extra,
  });
  const admin = async (...args: string[]) => {
    const child = Bun.spawn([process.execPath, "scripts/admin.ts", ...args], {
      cwd: ROOT,
      env,
      stdout: "pipe",
      stderr: "pipe",
    });
    const stdout = await new Response(child.stdout).text();
    expect(await child.exited).toBe(0);
    return stdout;
  };
  await admin("user:create", "--email", email, "--password", "long enough pw", "--name", "Shutdown");
  const token = (await admin("token:issue", "--email", email)).trim().split("\n").pop()!;
  const dev = Bun.spawn([process.execPath, "scripts/dev.ts"], {
    cwd: ROOT,
    env,
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  return { dev, out: collect(dev.stdout), mcp: `http://localhost:${port}/mcp`, token };
}

/** An initialized MCP session over plain HTTP: the headers every later request of it carries. */
async function openSession(mcp: string, token: string): Promise<Record<string, string>> {
  const headers = {
    Authorization: `Bearer ${token}`,
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
  };
  const init = await fetch(mcp, {
    method: "POST",
    headers,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "shutdown-test", version: "1" } },
    }),
  });
  expect(init.status).toBe(200);
  await init.text();
  const sessionHeaders = {
    ...headers,
    "Mcp-Session-Id": init.headers.get("mcp-session-id")!,
    "Mcp-Protocol-Version": "2025-11-25",
  };
  const initialized = await fetch(mcp, {
    method: "POST",
    headers: sessionHeaders,
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
  });
  expect(initialized.status).toBe(202);
  return sessionHeaders;
}

describe("bun run dev", () => {
  test("exits after SIGTERM while an MCP client holds its GET event stream open; the stream ends", async () => {
    const { dev, out, mcp, token } = await startDevWithUser("stream@example.com");
    try {
      await out.waitFor("Hatch is running");
      const sessionHeaders = await openSession(mcp, token);

      // The stream opens at once: a comment line first (the SDK itself writes nothing until its 15 s keep-alive).
      const stream = await fetch(mcp, { method: "GET", headers: { ...sessionHeaders, Accept: "text/event-stream" } });
      expect(stream.status).toBe(200);
      expect(stream.headers.get("content-type")).toContain("text/event-stream");
      const reader = stream.body!.getReader();
      const first = await reader.read();
      expect(new TextDecoder().decode(first.value)).toStartWith(": open");
      const streamEnded = (async () => {
        while (!(await reader.read()).done) {}
      })().then(
        () => "ended",
        () => "ended with an error",
      );

      dev.kill("SIGTERM");
      expect(await dev.exited).toBe(EXIT_CODES.clean);
      expect(["ended", "ended with an error"]).toContain(await streamEnded);
      await out.ended;
      expect(logLines(out, "shutdown step did not finish in its time; going on")).toEqual([]);
      expect(logLines(out, "stopped")).toHaveLength(1);
    } finally {
      if (dev.exitCode === null) dev.kill("SIGKILL");
    }
  }, 180_000);
});

describe("bun run dev, a tool call in flight", () => {
  test("SIGTERM while a tool call waits on the outside world: the call finishes with its answer, then dev exits 0", async () => {
    // find_domain asks the registrar; this Name.com stand-in holds the question until the test lets it answer, so the
    // call is certainly in flight when the signal comes.
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let asked!: () => void;
    const registrarAsked = new Promise<void>((resolve) => {
      asked = resolve;
    });
    const registrar = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(request) {
        const body = (await request.json()) as { domainNames: string[] };
        asked();
        await released;
        return Response.json({
          results: body.domainNames.map((domainName) => ({
            domainName,
            purchasable: true,
            purchasePrice: 12.5,
            renewalPrice: 14,
            purchaseType: "registration",
          })),
        });
      },
    });
    const { dev, out, mcp, token } = await startDevWithUser("inflight@example.com", {
      REGISTRAR: "namecom",
      NAMECOM_API_URL: `http://127.0.0.1:${registrar.port}`,
      NAMECOM_USERNAME: "test",
      NAMECOM_TOKEN: "test-token",
    });
    try {
      await out.waitFor("Hatch is running");
      const sessionHeaders = await openSession(mcp, token);
      const call = fetch(mcp, {
        method: "POST",
        headers: sessionHeaders,
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 2,
          method: "tools/call",
          params: { name: "find_domain", arguments: { query: "inflight.com", limit: 1 } },
        }),
      }).then((response) => response.text());
      await registrarAsked;
      dev.kill("SIGTERM");
      await out.waitFor("shutting down");
      release();
      const answer = await call;
      expect(answer).toContain("inflight.com");
      expect(answer).toContain("12.50");
      expect(answer).not.toContain('"isError":true');
      expect(await dev.exited).toBe(EXIT_CODES.clean);
      await out.ended;
      expect(logLines(out, "shutdown step did not finish in its time; going on")).toEqual([]);
    } finally {
      release();
      if (dev.exitCode === null) dev.kill("SIGKILL");
      registrar.stop(true);
    }
  }, 180_000);
});

/** A nats-server of this test's own on a free port, so it can be stopped under a service. */
async function startNats(): Promise<{ url: string; process: Bun.Subprocess }> {
  const port = freePort();
  const child = Bun.spawn(
    ["nats-server", "-a", "127.0.0.1", "-p", String(port), "-js", "-sd", mkdtempSync(join(tmpdir(), "hatch-nats-"))],
    { stdout: "ignore", stderr: "pipe", stdin: "ignore" },
  );
  await collect(child.stderr).waitFor("Server is ready");
  return { url: `nats://127.0.0.1:${port}`, process: child };
}

describe.skipIf(!process.env.TEST_DATABASE_URL)("a service started alone", () => {
  // Killed: the connection drops. Frozen (SIGSTOP): the connection stays open and nothing answers, the worst case
  // for a drain that waits on the server.
  test.each(["killed", "frozen"] as const)(
    "exits on SIGTERM after its NATS server was %s under it",
    async (fault) => {
      const nats = await startNats();
      const database = await freshDatabase(process.env.TEST_DATABASE_URL!);
      const env = baseEnv({
        NATS_URL: nats.url,
        DATABASE_URL: database.url,
        HATCH_SECRET: TEST_SECRET,
        LOG_LEVEL: "info",
        BUS_PREFIX: uniqueName("shutdown"),
      });
      const service = Bun.spawn([process.execPath, "src/main.ts"], {
        cwd: join(ROOT, "services/domains"),
        env,
        stdout: "pipe",
        stderr: "pipe",
        stdin: "ignore",
      });
      const out = collect(service.stdout);
      try {
        await out.waitFor('"msg":"service ready"');
        if (fault === "killed") {
          nats.process.kill("SIGKILL");
          await nats.process.exited;
        } else nats.process.kill("SIGSTOP");
        service.kill("SIGTERM");
        // Exited by itself, cleanly or at its deadline, never killed: either way with a logged reason.
        expect<number[]>([EXIT_CODES.clean, EXIT_CODES.deadline]).toContain(await service.exited);
        expect(service.signalCode).toBeNull();
        await out.ended;
        expect(logLines(out, "shutting down")[0]).toMatchObject({ reason: "SIGTERM", service: "domains" });
        const finished =
          logLines(out, "stopped").length +
          logLines(out, "shutdown deadline passed: exiting with work unfinished").length;
        expect(finished).toBe(1);
      } finally {
        if (service.exitCode === null) service.kill("SIGKILL");
        if (nats.process.exitCode === null) nats.process.kill("SIGKILL");
        await nats.process.exited;
        await database.drop();
      }
    },
    60_000,
  );
});
