// The admin socket: how `bun run admin` reaches a running `bun run dev` whose embedded database (PGlite, one
// process at a time) it cannot open itself. HTTP over a unix socket in `<DATA_DIR>/admin/`, a folder only the
// owner may enter (0700), the socket 0600, and every request must carry the random token dev writes beside it
// (0600, new on every start). Permissions keep other local users out; the token also refuses a stray process
// that reaches the socket some other way (a container sharing the folder, a platform ignoring socket modes).
import type { Auth } from "@hatch/gateway";
import type { Logger } from "@hatch/platform";
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AdminRequestSchema, runAdminCommand, type AdminRequest, type AdminResult } from "./admin-commands.ts";

/** sun_path holds 104 bytes on macOS, 108 on Linux, with the terminating NUL. */
const MAX_SOCKET_PATH = 103;
/** An admin request is a few short strings; anything bigger is not one. */
const MAX_BODY_BYTES = 16 * 1024;
/** Hashing a password takes well under a second; past this the server is stuck, not slow. */
const ANSWER_TIMEOUT_MS = 30_000;

export function adminSocketPaths(dataDir: string) {
  const dir = join(dataDir, "admin");
  return { dir, socket: join(dir, "socket"), token: join(dir, "token") };
}

export interface AdminSocket {
  stop(): void;
}

export interface AdminSocketOptions {
  dataDir: string;
  auth: Auth;
  mcpUrl: string;
  logger: Logger;
}

function json(status: number, body: AdminResult): Response {
  return Response.json(body, { status });
}

const digest = (value: string) => createHash("sha256").update(value).digest();

/**
 * Serves the admin commands on `<dataDir>/admin/socket`. Call it only while holding the data dir lock: it
 * replaces whatever a killed dev left there. Null (and a warning) when the path is too long for a unix socket.
 */
export function serveAdminSocket(options: AdminSocketOptions): AdminSocket | null {
  const paths = adminSocketPaths(options.dataDir);
  if (Buffer.byteLength(paths.socket) > MAX_SOCKET_PATH) {
    options.logger.warn(
      "admin socket off: the data dir path is too long for a unix socket; stop dev to use bun run admin",
      { path: paths.socket },
    );
    return null;
  }
  try {
    return listen(paths, options);
  } catch (error) {
    // A convenience of dev, not a reason to stop it: admin then says dev does not answer.
    options.logger.warn("admin socket off: it could not be created; stop dev to use bun run admin", {
      path: paths.socket,
      error,
    });
    rmSync(paths.dir, { recursive: true, force: true });
    return null;
  }
}

function listen(paths: ReturnType<typeof adminSocketPaths>, options: AdminSocketOptions): AdminSocket {
  rmSync(paths.dir, { recursive: true, force: true });
  mkdirSync(paths.dir, { mode: 0o700 });
  chmodSync(paths.dir, 0o700); // mkdir's mode passes through the umask
  const token = randomBytes(32).toString("hex");
  writeFileSync(paths.token, `${token}\n`, { mode: 0o600, flag: "wx" });
  const expected = digest(`Bearer ${token}`);

  const server = Bun.serve({
    unix: paths.socket,
    maxRequestBodySize: MAX_BODY_BYTES,
    async fetch(request) {
      const given = digest(request.headers.get("authorization") ?? "");
      if (!timingSafeEqual(given, expected)) {
        options.logger.warn("admin socket: request with a wrong token refused");
        return json(401, {
          ok: false,
          message: `Wrong admin token: read it from ${paths.token} (it changes each time dev starts).`,
        });
      }
      const path = new URL(request.url).pathname;
      if (request.method !== "POST" || path !== "/run")
        return json(404, { ok: false, message: "The admin socket answers POST /run only." });
      const body = await request.json().catch(() => undefined);
      const parsed = AdminRequestSchema.safeParse(body);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        return json(400, {
          ok: false,
          message: `Bad admin request: ${issue?.path.join(".") || "body"}: ${issue?.message ?? "invalid"}.`,
        });
      }
      const result = await runAdminCommand(options.auth, options.mcpUrl, parsed.data, options.logger);
      options.logger.info("admin command run over the socket", { command: parsed.data.command, ok: result.ok });
      return json(result.ok ? 200 : 400, result);
    },
    error(error) {
      options.logger.error("admin socket request failed", { error });
      return json(500, { ok: false, message: "The admin request failed inside Hatch; its log has the details." });
    },
  });
  chmodSync(paths.socket, 0o600);
  return {
    stop() {
      void server.stop(true);
      rmSync(paths.dir, { recursive: true, force: true });
    },
  };
}

/** The running server's answer, or why there is none (no socket, nobody listening, no token readable). */
export type SocketCall = { answered: true; result: AdminResult } | { answered: false; reason: string };

/** Sends one admin command to the dev server holding `dataDir`. */
export async function callAdminSocket(
  dataDir: string,
  request: AdminRequest,
  answerTimeoutMs = ANSWER_TIMEOUT_MS,
): Promise<SocketCall> {
  const paths = adminSocketPaths(dataDir);
  let token: string;
  try {
    token = readFileSync(paths.token, "utf8").trim();
  } catch (error) {
    const code = (error as { code?: string }).code;
    return {
      answered: false,
      reason: code === "EACCES" ? `${paths.token} is not readable by this user` : "it has no admin socket",
    };
  }
  let response: Response;
  try {
    response = await fetch("http://hatch-admin/run", {
      unix: paths.socket,
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(request),
      signal: AbortSignal.timeout(answerTimeoutMs),
    });
  } catch (error) {
    const timedOut = (error as { name?: string }).name === "TimeoutError";
    return {
      answered: false,
      reason: timedOut
        ? `its admin socket gave no answer in ${answerTimeoutMs / 1000} s`
        : "nothing answers on its admin socket",
    };
  }
  const result = (await response.json().catch(() => null)) as AdminResult | null;
  if (!result || typeof result.ok !== "boolean")
    return { answered: false, reason: `its admin socket answered ${response.status} without a result` };
  return { answered: true, result };
}
