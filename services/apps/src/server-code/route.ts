import { formatBytes } from "@hatch/contracts";
import { SERVER_LIMITS } from "../spec/server-code.ts";
import { type Logger } from "@hatch/platform";
import { appOrigin } from "../config.ts";
import type { AppsContext } from "../context.ts";
import { isOwnOrigin, type DataCaller } from "../http/caller.ts";
import { DataError, json } from "../http/answers.ts";
import { isHatchCookieName, setCookieName } from "../http/viewer.ts";
import type { Site } from "../http/site.ts";
import { hostCall, type EnvDeps } from "./env-host.ts";
import type { FairnessOptions } from "./fairness.ts";
import type { LostCause, RunResult } from "./protocol.ts";
import { SandboxRunner } from "./runner.ts";
import type { SandboxLimits, SandboxReply } from "./types.ts";

// `/api` and `/api/…` on an app's origin, when its current version has server code: the request (after the same
// checks as the data routes) goes to the app's fetch(request, env) in the sandbox, and its Response comes back.
// Whatever goes wrong is a log line for the owner (tool_logs) and a short JSON error for the browser, never a stack.

export interface ServerCodeOptions {
  limits?: Partial<SandboxLimits>;
  fairness?: Partial<FairnessOptions>;
  workers?: number;
  /** The sandbox worker's module (tests only). */
  workerUrl?: URL;
}

export interface ServerCode {
  answer(request: Request, url: URL, caller: DataCaller): Promise<Response>;
  flushLogs(): Promise<void>;
  stop(): Promise<void>;
}

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "proxy-authenticate",
  "proxy-authorization",
  "content-length",
]);
const SOURCES_KEPT = 32;

/**
 * The server code route family: `/api` of an app whose current version has server code. `env` is what the
 * sandbox's env calls reach (the data routes, outbound calls); the caller was verified by the router.
 */
export function createServerCode(
  ctx: Pick<AppsContext, "db" | "config" | "blobs" | "appLogs">,
  log: Logger,
  env: Omit<EnvDeps, "db">,
  options: ServerCodeOptions = {},
): ServerCode {
  const envDeps: EnvDeps = { db: ctx.db, ...env };
  const limits: SandboxLimits = {
    cpuMs: SERVER_LIMITS.cpuMsPerRequest,
    wallMs: SERVER_LIMITS.requestSeconds * 1000,
    memoryBytes: SERVER_LIMITS.memoryBytes,
    stackBytes: 512 * 1024,
    hostCalls: SERVER_LIMITS.hostCallsPerRequest,
    maxResponseBytes: SERVER_LIMITS.maxResponseBytes,
    ...options.limits,
  };
  const fairness: FairnessOptions = {
    msPerSecond: SERVER_LIMITS.cpuMsPerSecond,
    burstMs: SERVER_LIMITS.cpuBurstMs,
    quarantineMs: 10 * 60_000,
    stuckPenaltyMs: 10_000,
    ...options.fairness,
  };
  const runner = new SandboxRunner(
    {
      workers: options.workers ?? 2,
      workerUrl: options.workerUrl,
      quarantineWorkers: 1,
      fairness,
      limits,
      pool: { perVersion: 4, total: 200, idleMs: 5 * 60_000 },
      logLinesPerRequest: SERVER_LIMITS.logLinesPerRequest,
      logLineChars: SERVER_LIMITS.logLineChars,
    },
    log,
  );
  const logs = ctx.appLogs;
  const sources = new Map<string, string>();

  async function loadSource(file: NonNullable<Site["server"]>): Promise<string> {
    const known = sources.get(file.sha256);
    if (known !== undefined) return known;
    const blob = await ctx.blobs.get(file.sha256);
    if (!blob) throw new Error(`server module ${file.sha256} is missing from the blob store`);
    const source = await blob.text();
    if (sources.size >= SOURCES_KEPT) sources.delete(sources.keys().next().value!);
    sources.set(file.sha256, source);
    return source;
  }

  async function answer(request: Request, url: URL, caller: DataCaller): Promise<Response> {
    const { app } = caller;
    const site = app.site!;
    const file = site.server!;
    const body = await readBody(request);
    const origin = appOrigin(ctx.config, app.address);
    // A request from another origin runs without the viewer: the cookie came along, the person did not choose to.
    const viewer = fromOwnOrigin(request, origin) ? caller.viewer : null;
    const done = await runner.run({
      app: app.id,
      key: `${app.id}:${site.version}`,
      filename: file.path,
      loadSource: () => loadSource(file),
      request: {
        method: request.method,
        url: origin + url.pathname + url.search,
        headers: requestHeaders(request),
        body,
        viewer: viewer ? { email: viewer.email, name: viewer.name ?? null } : null,
      },
      hostCall: (op, payload) => hostCall(envDeps, app, viewer, op, payload, caller.rateKey),
    });
    logs.request(app.id, done.logs, done.dropped);
    if (done.result.kind === "ok") {
      const size =
        done.result.reply.body === null
          ? 0
          : typeof done.result.reply.body === "string"
            ? Buffer.byteLength(done.result.reply.body)
            : done.result.reply.body.byteLength;
      if (size <= limits.maxResponseBytes) return toResponse(done.result.reply, request.method);
      logs.add(
        app.id,
        "error",
        `${request.method} ${url.pathname}: the response body is ${formatBytes(size)}; at most ${formatBytes(limits.maxResponseBytes)} may be sent.`,
      );
      return failed(500, "This app's server code answered with a body larger than Hatch sends.");
    }
    return failure(app.id, `${request.method} ${url.pathname}`, done.result);
  }

  function failure(appId: string, what: string, result: Exclude<RunResult, { kind: "ok" }>): Response {
    switch (result.kind) {
      case "error":
        logs.add(
          appId,
          "error",
          `${what}: uncaught ${result.message}${result.stack ? `\n${result.stack.replace(/\n$/, "")}` : ""}`,
        );
        return failed(500, "This app's server code failed. Its owner can read why in the app's logs (tool_logs).");
      case "cpu":
        logs.add(appId, "error", `${what}: stopped after ${limits.cpuMs} ms of CPU time (the limit per request).`);
        return failed(500, "This app's server code ran too long and was stopped.");
      case "memory":
        logs.add(
          appId,
          "error",
          `${what}: stopped: it used more than ${Math.round(limits.memoryBytes / 1024 / 1024)} MB of memory.`,
        );
        return failed(500, "This app's server code used too much memory and was stopped.");
      case "timeout":
        logs.add(
          appId,
          "error",
          `${what}: stopped after ${limits.wallMs / 1000} s: the request took longer than its time limit (its timers never fire).`,
        );
        return failed(504, "This app's server code did not answer in time.");
      case "stalled":
        logs.add(
          appId,
          "error",
          `${what}: fetch's promise can never settle: it awaits something nothing will resolve (a promise never resolved, no timer or env call pending).`,
        );
        return failed(500, "This app's server code never answered.");
      case "load":
        logs.add(
          appId,
          "error",
          `${what}: the server module could not be loaded: ${result.message}${result.stack ? `\n${result.stack.replace(/\n$/, "")}` : ""}`,
        );
        return failed(
          500,
          "This app's server code could not start. Its owner can read why in the app's logs (tool_logs).",
        );
      case "lost": {
        if (result.cause === "own") {
          logs.add(
            appId,
            "error",
            `${what}: stopped without an answer: another request of this app ran past the CPU limit inside one built-in, and the sandbox worker running both was stopped.`,
          );
          return failed(
            503,
            "This app's server code was stopped while answering: another of its requests ran too long. Try again.",
            {
              "Retry-After": "1",
            },
          );
        }
        // Hatch's failure: the owner's log and the answer say so, and whether a retry repeats anything.
        const retry =
          result.calls === 0
            ? "Nothing it did took effect, so a retry is safe."
            : `It had made ${result.calls === 1 ? "1 env call" : `${result.calls} env calls`} (env.db, env.files, env.api, env.ai), which may have taken effect; a retry is safe if repeating ${result.calls === 1 ? "it" : "them"} is.`;
        logs.add(
          appId,
          "warn",
          `${what}: not answered (503): ${LOST_CAUSES[result.cause]}. This was Hatch's failure; nothing in the app's code caused it. ${retry}`,
        );
        return failed(
          503,
          `Hatch failed while running this app's server code (${LOST_CAUSES[result.cause]}); nothing in the app's code caused it. ${retry}`,
          { "Retry-After": "1" },
        );
      }
      case "throttled": {
        const seconds = Math.max(1, Math.ceil(result.waitMs / 1000));
        if (result.first)
          logs.add(
            appId,
            "warn",
            `${what}: refused (429) for about ${seconds} s: the app's server code used more than its CPU time (${fairness.msPerSecond} ms a second on average, ${fairness.burstMs} ms at once).`,
          );
        return json(
          {
            error: {
              code: "limit_exceeded",
              message: `This app's server code used its share of CPU time. Try again in ${seconds} s.`,
            },
          },
          429,
          { "Retry-After": String(seconds) },
        );
      }
    }
  }

  async function readBody(request: Request): Promise<Uint8Array | null> {
    if (request.method === "GET" || request.method === "HEAD" || !request.body) return null;
    const tooLarge = () =>
      new DataError(
        "too_large",
        `A request to server code may carry at most ${formatBytes(SERVER_LIMITS.maxRequestBytes)}.`,
      );
    const declared = Number(request.headers.get("content-length") ?? 0);
    if (declared > SERVER_LIMITS.maxRequestBytes) throw tooLarge();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of request.body) {
      size += chunk.byteLength;
      if (size > SERVER_LIMITS.maxRequestBytes) throw tooLarge();
      chunks.push(chunk);
    }
    return Buffer.concat(chunks, size);
  }

  return {
    answer,
    flushLogs: () => logs.flush(),
    async stop() {
      await runner.stop();
      await logs.stop();
    },
  };
}

/** Why a request was lost through Hatch's fault, as its owner's log and the answer say it. */
const LOST_CAUSES: Record<Exclude<LostCause, "own">, string> = {
  replaced: "the sandbox worker running it was restarted",
  engine: "the sandbox engine (QuickJS) failed",
  source: "Hatch could not read the server module from its file store",
  stopping: "the app host was stopping",
};

function failed(status: number, message: string, headers: Record<string, string> = {}): Response {
  return json({ error: { code: "unavailable", message } }, status, headers);
}

function fromOwnOrigin(request: Request, origin: string): boolean {
  const site = request.headers.get("sec-fetch-site");
  const from = request.headers.get("origin");
  return (
    (site === null || site === "same-origin" || site === "none") &&
    (from === null || isOwnOrigin(request, from, origin))
  );
}

/** The request's headers for the app, names lower-case, without Hatch's own cookies. */
function requestHeaders(request: Request): [string, string][] {
  const headers: [string, string][] = [];
  request.headers.forEach((value, name) => {
    if (name === "cookie") {
      const kept = value.split(/;\s*/).filter((pair) => pair && !isHatchCookieName(setCookieName(pair)));
      if (kept.length) headers.push([name, kept.join("; ")]);
    } else headers.push([name, value]);
  });
  return headers;
}

function toResponse(reply: SandboxReply, method: string): Response {
  const headers = new Headers();
  for (const [name, value] of reply.headers) {
    if (HOP_BY_HOP.has(name)) continue;
    // The browser reads the name trimmed: "hatch_viewer =x" sets hatch_viewer. No spelling of a Hatch cookie passes.
    if (name === "set-cookie" && isHatchCookieName(setCookieName(value))) continue;
    headers.append(name, value);
  }
  if (!headers.has("x-content-type-options")) headers.set("x-content-type-options", "nosniff");
  const noBody = method === "HEAD" || reply.status === 204 || reply.status === 304;
  return new Response(noBody ? null : (reply.body as string | Uint8Array<ArrayBuffer> | null), {
    status: reply.status,
    headers,
  });
}
