// `bun run dev` started for a script that checks it from outside (conformance, inspector:strict): free ports, a fresh
// data dir, one user with an access token, and a clean stop. Loopback only.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function freePort(): number {
  const probe = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

/** Thrown by a waitUntil check when what it waits for can no longer come (the process ended). */
export class StartEnded extends Error {
  constructor(code: number) {
    super(`bun run dev exited with code ${code}`);
  }
}

export async function waitUntil(check: () => Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const done = await check().catch((error: unknown) => {
      if (error instanceof StartEnded) throw error;
      return false;
    });
    if (done) return;
    await Bun.sleep(200);
  }
  throw new Error(`gave up waiting for ${what}`);
}

export interface RunResult {
  code: number;
  out: string;
  err: string;
}

export async function run(command: string[], env: Record<string, string>): Promise<RunResult> {
  const child = Bun.spawn(command, { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { code, out, err };
}

export interface DevUnderTest {
  /** The gateway's own port (the base URL may name another, e.g. a proxy in front). */
  port: number;
  baseUrl: string;
  /** An access token of the one user (created with `bun run admin`, email verified). */
  token: string;
  stop(): Promise<void>;
}

/**
 * Starts `bun run dev` on a fresh data dir and free ports, waits for /healthz, creates `email` and issues its token.
 * `baseUrl` defaults to the gateway's own address; `env` adds settings (limits, log level).
 */
export async function startDevWithUser(options: {
  email: string;
  baseUrl?: (port: number) => string;
  env?: Record<string, string>;
}): Promise<DevUnderTest> {
  const dataDir = mkdtempSync(join(tmpdir(), "hatch-dev-harness-"));
  const port = freePort();
  const baseUrl = options.baseUrl?.(port) ?? `http://localhost:${port}`;
  const env = {
    PORT: String(port),
    BASE_URL: baseUrl,
    APP_PORT: String(freePort()),
    DATA_DIR: dataDir,
    LOG_LEVEL: "warn",
    ...options.env,
  };
  const dev = Bun.spawn(["bun", "scripts/dev.ts"], {
    env: { ...process.env, ...env },
    stdout: "ignore",
    stderr: "pipe",
  });
  // Read as it comes (a pipe nobody reads stops the writer once full); its end is told when the start fails.
  let stderr = "";
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of dev.stderr) stderr = (stderr + decoder.decode(chunk, { stream: true })).slice(-4_000);
  })().catch(() => {});
  const stop = async () => {
    dev.kill("SIGTERM");
    await dev.exited;
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    try {
      // A fresh data dir's embedded Postgres on a machine busy with the tests (CI runs this beside them) can take a
      // while; a dev that ended is told at once.
      await waitUntil(
        async () => {
          if (dev.exitCode !== null) throw new StartEnded(dev.exitCode);
          return (await fetch(`http://127.0.0.1:${port}/healthz`)).ok;
        },
        "bun run dev to answer /healthz",
        180_000,
      );
    } catch (error) {
      throw new Error(`${error instanceof Error ? error.message : String(error)}; its stderr ended with:\n${stderr}`);
    }
    const admin = (args: string[]) => run(["bun", "scripts/admin.ts", ...args], env);
    const created = await admin([
      "user:create",
      "--email",
      options.email,
      "--password",
      "harness-password-1",
      "--name",
      "Harness",
    ]);
    if (created.code !== 0) throw new Error(`user:create failed: ${created.out}${created.err}`);
    const issued = await admin(["token:issue", "--email", options.email]);
    const token = issued.out.match(/^eyJ[\w-]+\.[\w-]+\.[\w-]+$/m)?.[0];
    if (issued.code !== 0 || !token) throw new Error(`token:issue failed: ${issued.out}${issued.err}`);
    return { port, baseUrl, token, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
