/// <reference lib="webworker" />
import { setPriority } from "node:os";
import { currentThreadId } from "./cpu-clock.ts";
import { quickJs } from "./engine.ts";
import { wasmHeapBytes } from "./marshal.ts";
import { InstancePool } from "./pool.ts";
import type { FromWorker, RunEnd, RunResult, ToWorker, WorkerSetup } from "./protocol.ts";
import { HostCallError, ModuleLoadError, type HostCallResult, type LogLevel, type RequestHooks } from "./types.ts";

// A sandbox worker: one QuickJS WebAssembly module and its warm instances, in a thread of its own, so the app
// host's thread keeps answering whatever the app code does. QuickJS checks its interrupt handler only every 10,000
// steps; a step that is one expensive built-in (a megabyte-long String.repeat) can make that seconds, and only a
// thread the app host can terminate bounds it (see runner.ts's watchdog).

declare const self: Worker & { onmessage: ((event: MessageEvent) => void) | null };

let pool: InstancePool | null = null;
let board: Int32Array | null = null;
/** Sources of the versions this worker has run, newest last (a small bound: main resends one when asked). */
const sources = new Map<string, { source: string; filename: string }>();
const MAX_SOURCES = 64;
const calls = new Map<string, { resolve(value: HostCallResult): void; reject(error: unknown): void }>();
let nextCall = 0;

function post(message: FromWorker, transfer: Transferable[] = []): void {
  self.postMessage(message, transfer);
}

async function start(options: WorkerSetup, queued: ToWorker[]): Promise<void> {
  // On Linux a nice value set with pid 0 is the calling thread's alone (elsewhere it would be the whole process's).
  if (options.nice !== 0 && process.platform === "linux") {
    try {
      setPriority(0, options.nice);
    } catch {
      // Not allowed here: the worker runs at the app host's priority.
    }
  }
  const module = await quickJs();
  board = new Int32Array(options.board);
  Atomics.store(board, 2, currentThreadId());
  pool = new InstancePool(module, options.limits, options.pool);
  self.onmessage = (event: MessageEvent) => receive(event.data as ToWorker, options, module);
  for (const message of queued.splice(0)) receive(message, options, module);
  post(["ready"]);
}

function receive(message: ToWorker, options: WorkerSetup, module: Parameters<typeof wasmHeapBytes>[0]): void {
  if (message[0] === "answer" || message[0] === "refuse") {
    const name = `${message[1]}:${message[2]}`;
    const waiting = calls.get(name);
    calls.delete(name);
    if (!waiting) return;
    if (message[0] === "answer") waiting.resolve(message[3]);
    else waiting.reject(new HostCallError(message[3], message[4], message[5]));
    return;
  }
  const [, id, key, filename, source, meta, body] = message;
  if (source !== null) {
    sources.delete(key);
    sources.set(key, { source, filename });
    if (sources.size > MAX_SOURCES) sources.delete(sources.keys().next().value!);
  }
  const known = sources.get(key);
  if (!known) return post(["need", id]);
  void run(id, key, known, meta, body, options, module);
}

async function run(
  id: number,
  key: string,
  known: { source: string; filename: string },
  meta: string,
  body: Uint8Array | null,
  options: WorkerSetup,
  module: Parameters<typeof wasmHeapBytes>[0],
): Promise<void> {
  const logs: [LogLevel, string][] = [];
  let dropped = 0;
  let cpuMs = 0;
  const hooks: RequestHooks = {
    log(level, message) {
      if (logs.length >= options.logLinesPerRequest) dropped++;
      else
        logs.push([
          level,
          message.length > options.logLineChars ? `${message.slice(0, options.logLineChars - 1)}…` : message,
        ]);
    },
    hostCall(op, body) {
      const call = ++nextCall;
      return new Promise<HostCallResult>((resolve, reject) => {
        calls.set(`${id}:${call}`, { resolve, reject });
        post(["call", id, call, op, body], body ? [body.buffer as ArrayBuffer] : []);
      });
    },
    watch(running) {
      if (!board) return;
      Atomics.store(board, 0, running ? id : 0);
      if (running) Atomics.add(board, 1, 1);
    },
    beat() {
      if (board) Atomics.add(board, 1, 1);
    },
    spent(ms) {
      cpuMs += ms;
    },
    waiting() {
      post(["started", id]);
    },
  };
  let crashed: string | undefined;
  let result: RunResult;
  try {
    const instance = await pool!.acquire({ key, ...known }, hooks);
    try {
      result = await instance.run(meta, body, hooks);
    } finally {
      pool!.release(key, instance);
    }
  } catch (error) {
    if (error instanceof ModuleLoadError)
      result = { kind: "load", message: error.message, stack: error.stack_, limit: error.limit };
    else {
      // QuickJS itself failed (an abort leaves the WebAssembly module unusable), not the app's code: the runner replaces
      // this worker and the answer says a retry is safe (the runner counts the env calls the request had made).
      result = { kind: "lost", cause: "engine", calls: 0 };
      crashed = String(error).slice(0, 300);
    }
  }
  for (const name of [...calls.keys()]) if (name.startsWith(`${id}:`)) calls.delete(name);
  // An ok reply's body travels beside the JSON: text as it is, bytes handed over (the worker keeps no copy).
  let replyBody: string | Uint8Array | null = null;
  if (result.kind === "ok") {
    replyBody = result.reply.body;
    result = { kind: "ok", reply: { ...result.reply, body: null } };
  }
  const end: RunEnd = { result, logs, dropped, heap: wasmHeapBytes(module), cpuMs, crashed };
  post(
    ["done", id, JSON.stringify(end), replyBody],
    typeof replyBody === "object" && replyBody ? [replyBody.buffer as ArrayBuffer] : [],
  );
}

// The first message is the setup; runs that come while QuickJS loads wait for it.
const early: ToWorker[] = [];
self.onmessage = (event: MessageEvent) => {
  const data = event.data as ToWorker | { t: "setup"; setup: WorkerSetup };
  if ("t" in data) void start(data.setup, early);
  else early.push(data);
};
