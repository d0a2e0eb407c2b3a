import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { adminSocketPaths } from "../scripts/admin-socket.ts";
import { freePort, freshDatabase, realServers, uniqueName } from "./support/servers.ts";
import { migratedDataDir } from "./support/templates.ts";

// `bun run admin` with and without a running `bun run dev` on the same data dir: real processes, real ports.
const ROOT = join(import.meta.dir, "..");
const PASSWORD = "long enough pw";
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

type Env = Record<string, string>;
/** A new data dir and the environment that points dev and admin at it. */
function freshEnv(): Env {
  const dir = mkdtempSync(join(tmpdir(), "hatch-admin-"));
  dirs.push(dir);
  const env: Env = {
    ...(process.env as Env),
    DATA_DIR: dir,
    PORT: String(freePort()),
    APP_PORT: String(freePort()),
    LOG_LEVEL: "warn",
  };
  delete env.DATABASE_URL;
  delete env.NATS_URL;
  delete env.HATCH_SECRET;
  delete env.BASE_URL;
  return env;
}
/** freshEnv() whose data dir holds a migrated database already, for tests about anything but a first start. */
async function migratedEnv(): Promise<Env> {
  const env = freshEnv();
  await migratedDataDir(env.DATA_DIR!);
  return env;
}

async function admin(env: Env, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = Bun.spawn(["bun", "run", "admin", ...args], {
    cwd: ROOT,
    env,
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { code, stdout, stderr };
}

const createUser = (env: Env, email: string) =>
  admin(env, "user:create", "--email", email, "--password", PASSWORD, "--name", "Ops");
/** The token: the last stdout line. */
async function issueToken(env: Env, email: string, ...more: string[]): Promise<string> {
  const issued = await admin(env, "token:issue", "--email", email, ...more);
  expect(issued.stderr).toContain(`Access token for ${email} (grant gr_`);
  expect(issued.code).toBe(0);
  return issued.stdout.trim().split("\n").at(-1)!;
}

type Dev = Bun.Subprocess<"ignore", "pipe", "pipe">;
/** Starts `bun run dev` and waits for its banner. Its output is read to the end: a closed pipe would kill it on its next log line. */
async function startDev(env: Env): Promise<Dev> {
  const dev = Bun.spawn(["bun", "run", "dev"], { cwd: ROOT, env, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const stderr = new Response(dev.stderr).text();
  const reader = dev.stdout.getReader();
  const decoder = new TextDecoder();
  let seen = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`dev did not start: ${await stderr}`);
    seen += decoder.decode(value);
    if (seen.includes("Hatch is running")) break;
  }
  void (async () => {
    while (!(await reader.read()).done);
  })();
  return dev;
}
/** Signals dev itself: `bun run` passes SIGTERM on to its child, but a SIGKILL would take only `bun run`. */
async function stopDev(dev: Dev, env: Env, signal: "SIGTERM" | "SIGKILL" = "SIGTERM") {
  if (signal === "SIGTERM") dev.kill(signal);
  else {
    // The data dir lock names its holder: "bun run dev (pid N)".
    const pid = Number(/\(pid (\d+)\)/.exec(readFileSync(join(env.DATA_DIR!, "lock"), "utf8"))?.[1]);
    expect(pid).toBeGreaterThan(0);
    process.kill(pid, signal);
  }
  await dev.exited;
}

/** The token opens an MCP session with the SDK's client and lists the tools. */
async function toolsWith(env: Env, token: string): Promise<string[]> {
  const client = new Client({ name: "admin-test", version: "1.0.0" }, { capabilities: {} });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://localhost:${env.PORT}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  try {
    return (await client.listTools()).tools.map((tool) => tool.name);
  } finally {
    await client.close();
  }
}

/** A raw request on the admin socket with the given Authorization header. */
function onSocket(dataDir: string, authorization: string | null, body: unknown, path = "/run"): Promise<Response> {
  return fetch(`http://hatch-admin${path}`, {
    unix: adminSocketPaths(dataDir).socket,
    method: "POST",
    headers: authorization === null ? {} : { authorization },
    body: JSON.stringify(body),
  });
}

describe("bun run admin beside bun run dev (embedded database)", () => {
  const env = freshEnv();
  const dataDir = env.DATA_DIR!;
  let dev: Dev;

  beforeAll(async () => {
    // Alone first: nothing runs, so admin opens the database itself.
    const alone = await createUser(env, "first@example.com");
    expect(alone).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(/^Created user first@example\.com \(usr_[\w-]+\), email verified\.\n$/),
    });
    dev = await startDev(env);
  }, 60_000);
  afterAll(async () => {
    if (dev) await stopDev(dev, env);
  });

  test("user:create and token:issue run through dev, print what they print alone, and the token works on /mcp", async () => {
    const created = await createUser(env, "second@example.com");
    expect(created).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(/^Created user second@example\.com \(usr_[\w-]+\), email verified\.\n$/),
    });
    for (const email of ["first@example.com", "second@example.com"]) {
      const token = await issueToken(env, email, "--ttl", "600");
      expect(await toolsWith(env, token)).toContain("publish");
    }
    const readOnly = await admin(env, "token:issue", "--email", "second@example.com", "--read-only");
    expect(readOnly.stderr).toMatch(
      new RegExp(`\\(grant gr_[\\w-]+, read-only\\), audience http://localhost:${env.PORT}/mcp:\\n`),
    );
    // A made-up token is refused: /mcp does check what admin issued.
    const wrong = await fetch(`http://localhost:${env.PORT}/mcp`, {
      method: "POST",
      headers: { Authorization: "Bearer not-a-token", "content-type": "application/json" },
      body: "{}",
    });
    expect(wrong.status).toBe(401);
  }, 60_000);

  test("the socket and its token are the owner's alone", () => {
    const paths = adminSocketPaths(dataDir);
    expect(statSync(paths.dir).mode & 0o777).toBe(0o700);
    expect(statSync(paths.socket).mode & 0o777).toBe(0o600);
    expect(statSync(paths.token).mode & 0o777).toBe(0o600);
    expect(readFileSync(paths.token, "utf8").trim()).toMatch(/^[0-9a-f]{64}$/);
  });

  test("a wrong or missing token on the socket is refused and runs nothing", async () => {
    const body = { command: "user:create", email: "sneaky@example.com", password: PASSWORD, name: "Sneaky" };
    const token = readFileSync(adminSocketPaths(dataDir).token, "utf8").trim();
    for (const authorization of [null, "Bearer nope", `Bearer ${token}x`, token, `Basic ${token}`]) {
      const answer = await onSocket(dataDir, authorization, body);
      expect(answer.status).toBe(401);
      expect(((await answer.json()) as { message: string }).message).toContain(
        `read it from ${adminSocketPaths(dataDir).token}`,
      );
    }
    const notThere = await admin(env, "token:issue", "--email", "sneaky@example.com");
    expect(notThere).toMatchObject({
      code: 1,
      stderr: expect.stringContaining("No Hatch user has the email sneaky@example.com."),
    });
  }, 30_000);

  test("bad requests on the socket name what is wrong", async () => {
    const bearer = `Bearer ${readFileSync(adminSocketPaths(dataDir).token, "utf8").trim()}`;
    const cases: [unknown, string][] = [
      [{ command: "user:delete", email: "x@example.com" }, "Bad admin request: command:"],
      [{ command: "user:create", email: "x@example.com", name: "X" }, "Bad admin request: password:"],
      [
        { command: "token:issue", email: "x@example.com", readOnly: false, ttlSeconds: -5 },
        "Bad admin request: ttlSeconds:",
      ],
      [{ command: "token:issue", email: "x@example.com", readOnly: false, extra: 1 }, "Bad admin request: "],
      ["not an object", "Bad admin request: "],
    ];
    for (const [body, message] of cases) {
      const answer = await onSocket(dataDir, bearer, body);
      expect(answer.status).toBe(400);
      expect(((await answer.json()) as { message: string }).message).toStartWith(message);
    }
    const elsewhere = await onSocket(dataDir, bearer, {}, "/other");
    expect(elsewhere.status).toBe(404);
    const tooBig = await onSocket(dataDir, bearer, {
      command: "user:create",
      email: "x@example.com",
      password: "p".repeat(20_000),
      name: "X",
    });
    expect(tooBig.status).toBe(413);
  });

  test("refusals through dev read as they do alone", async () => {
    const twice = await createUser(env, "second@example.com");
    expect(twice).toMatchObject({
      code: 1,
      stdout: "",
      stderr: expect.stringContaining("An account with this email already exists."),
    });
    const unknown = await admin(env, "token:issue", "--email", "nobody@example.com");
    expect(unknown).toMatchObject({
      code: 1,
      stdout: "",
      stderr: expect.stringContaining("No Hatch user has the email nobody@example.com."),
    });
  }, 30_000);
});

describe("bun run admin when dev is gone or does not answer", () => {
  test("a dev killed with SIGKILL leaves a stale socket: admin runs alone; the next dev replaces the socket and its token", async () => {
    const env = await migratedEnv();
    const paths = adminSocketPaths(env.DATA_DIR!);
    const first = await startDev(env);
    const oldToken = readFileSync(paths.token, "utf8");
    await stopDev(first, env, "SIGKILL");
    expect(existsSync(paths.socket)).toBe(true); // left behind: nobody removed it

    expect((await createUser(env, "after-crash@example.com")).code).toBe(0);
    const direct = await issueToken(env, "after-crash@example.com");

    const second = await startDev(env);
    try {
      expect(readFileSync(paths.token, "utf8")).not.toBe(oldToken);
      expect((await onSocket(env.DATA_DIR!, `Bearer ${oldToken.trim()}`, {})).status).toBe(401);
      const through = await issueToken(env, "after-crash@example.com");
      expect(await toolsWith(env, direct)).toContain("publish");
      expect(await toolsWith(env, through)).toContain("publish");
    } finally {
      await stopDev(second, env);
    }
    expect(existsSync(paths.dir)).toBe(false); // a clean stop takes the socket away
  }, 90_000);

  test("a holder of the data dir that does not answer: admin stops with a message saying what to do", async () => {
    const env = freshEnv();
    const dir = env.DATA_DIR!;
    // A process that holds the lock and serves no socket (a dev still starting, or an admin running alone).
    const script = `import { lockDataDir } from ${JSON.stringify(join(ROOT, "scripts/data-dir.ts"))}; lockDataDir(${JSON.stringify(dir)}, "holder"); console.log("locked"); setInterval(() => {}, 1000);`;
    const holder = Bun.spawn(["bun", "-e", script], { cwd: ROOT, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
    try {
      for await (const chunk of holder.stdout) if (new TextDecoder().decode(chunk).includes("locked")) break;
      const refused = await createUser(env, "x@example.com");
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(
        `${dir} is in use by holder (pid ${holder.pid}), and it has no admin socket. Wait until it says "Hatch is running"`,
      );
    } finally {
      holder.kill("SIGKILL");
      await holder.exited;
    }
  }, 60_000);

  test("a data dir too deep for a unix socket: dev runs without one, and admin says to stop it", async () => {
    const env = freshEnv();
    env.DATA_DIR = join(env.DATA_DIR!, "a-folder-name-long-enough-to-push-the-socket-path-past-what-sun-path-holds");
    await migratedDataDir(env.DATA_DIR);
    const dev = await startDev(env);
    try {
      expect(existsSync(adminSocketPaths(env.DATA_DIR).dir)).toBe(false);
      const refused = await createUser(env, "deep@example.com");
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`${env.DATA_DIR} is in use by bun run dev (pid `);
      expect(refused.stderr).toContain("it has no admin socket");
    } finally {
      await stopDev(dev, env);
    }
  }, 60_000);

  test("stale socket and token while another process holds the lock: refused, not hung", async () => {
    const env = await migratedEnv();
    const dir = env.DATA_DIR!;
    const dev = await startDev(env);
    await stopDev(dev, env, "SIGKILL");
    const script = `import { lockDataDir } from ${JSON.stringify(join(ROOT, "scripts/data-dir.ts"))}; lockDataDir(${JSON.stringify(dir)}, "holder"); console.log("locked"); setInterval(() => {}, 1000);`;
    const holder = Bun.spawn(["bun", "-e", script], { cwd: ROOT, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
    try {
      for await (const chunk of holder.stdout) if (new TextDecoder().decode(chunk).includes("locked")) break;
      const refused = await admin(env, "token:issue", "--email", "x@example.com");
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(
        `is in use by holder (pid ${holder.pid}), and nothing answers on its admin socket.`,
      );
    } finally {
      holder.kill("SIGKILL");
      await holder.exited;
    }
  }, 60_000);
});

describe("bad arguments are refused before anything is opened", () => {
  const env = freshEnv();
  const cases: [string[], string][] = [
    [[], "Usage:"],
    [["user:delete", "--email", "a@example.com"], "Usage:"],
    [["token:issue"], "--email is required."],
    [["user:create", "--email", "a@example.com", "--name", "A"], "--password and --name are required."],
    [["token:issue", "--email", "a@example.com", "--ttl", "1.5"], "--ttl takes a whole number of seconds."],
    [["token:issue", "--email", "a@example.com", "--ttl", "0"], "--ttl takes a whole number of seconds."],
    [["token:issue", "--email", "a@example.com", "--colour", "red"], "Unknown option '--colour'"],
  ];
  for (const [args, message] of cases) {
    test(`${args.join(" ") || "(nothing)"}: ${message}`, async () => {
      const refused = await admin(env, ...args);
      expect(refused).toMatchObject({ code: 1, stdout: "" });
      expect(refused.stderr).toContain(message);
      expect(existsSync(join(env.DATA_DIR!, "pg"))).toBe(false);
    });
  }
});

// With Postgres any number of processes may open the database: admin goes there directly while dev runs.
describe.skipIf(!realServers)("bun run admin beside bun run dev on Postgres and NATS", () => {
  test("user:create and token:issue work directly while dev runs; the token works on /mcp", async () => {
    const database = await freshDatabase(realServers!.databaseUrl);
    const env: Env = {
      ...freshEnv(),
      DATABASE_URL: database.url,
      NATS_URL: realServers!.natsUrl,
      BUS_PREFIX: uniqueName("admin"),
      HATCH_SECRET: "a".repeat(64),
    };
    const dev = await startDev(env);
    try {
      expect(existsSync(adminSocketPaths(env.DATA_DIR!).dir)).toBe(false);
      expect((await createUser(env, "pg@example.com")).code).toBe(0);
      expect(await toolsWith(env, await issueToken(env, "pg@example.com"))).toContain("publish");
    } finally {
      await stopDev(dev, env);
      await database.drop();
    }
  }, 90_000);
});
