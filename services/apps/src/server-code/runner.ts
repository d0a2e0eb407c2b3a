import type { Logger } from "@hatch/shared";
import type { PoolOptions } from "./pool.ts";
import type { FromWorker, RunResult, ToWorker, WorkerSetup } from "./protocol.ts";
import { HostCallError, type HostCallResult, type LogLevel, type SandboxLimits, type SandboxRequest } from "./types.ts";

// The app host's side of the sandbox workers. Each app version goes to one worker (by a hash of its key), where its
// warm instances live. A watchdog reads each worker's board (which request is inside QuickJS, and how many entries and
// interrupt checks so far): a worker inside one entry with no interrupt check for longer than the CPU limit plus a
// grace is stuck in a built-in that starved the interrupt handler, and is terminated (code that reaches its checks
// is stopped by the CPU deadline in the worker, on the thread's CPU clock, however slow the machine); the request
// that was running ends as a CPU kill, the others it held are lost (they answer 503, try again). A worker whose
// WebAssembly memory grew past a bound, or where QuickJS itself failed, is replaced once idle.

export interface RunnerOptions {
  workers: number;
  limits: SandboxLimits;
  pool: PoolOptions;
  logLinesPerRequest: number;
  logLineChars: number;
  /** Beyond the CPU limit, how long one entry may run before its worker is terminated. */
  stuckGraceMs?: number;
  /** WebAssembly memory of one worker beyond which it is replaced (memory never shrinks inside a worker). */
  maxWorkerHeapBytes?: number;
}

export interface RunDone {
  result: RunResult;
  logs: [LogLevel, string][];
  dropped: number;
}

export interface RunSpec {
  /** `<app id>:<version>`: instances are per key. */
  key: string;
  filename: string;
  loadSource(): Promise<string>;
  request: SandboxRequest;
  hostCall(op: Record<string, unknown>, body: Uint8Array | null): Promise<HostCallResult>;
}

interface Running {
  spec: RunSpec;
  startedAt: number;
  resolve(done: RunDone): void;
}

interface Slot {
  worker: Worker;
  board: Int32Array;
  runs: Map<number, Running>;
  /** Keys whose source this worker was sent (it may have evicted some; it then asks again). */
  sent: Set<string>;
  seen: { counter: number; since: number };
  retired: boolean;
}

const WORKER_URL = new URL("./worker.ts", import.meta.url);

export class SandboxRunner {
  /** A worker per slot, started on the slot's first request (an app host without server code starts none). */
  private readonly slots: (Slot | null)[];
  private nextRun = 0;
  private readonly watchdog: ReturnType<typeof setInterval>;
  private stopped = false;

  constructor(
    private readonly options: RunnerOptions,
    private readonly log: Logger,
  ) {
    if (options.workers < 1) throw new Error("SandboxRunner: workers must be at least 1");
    this.slots = Array.from({ length: options.workers }, () => null);
    this.watchdog = setInterval(() => this.watch(), 100);
    this.watchdog.unref?.();
  }

  run(spec: RunSpec): Promise<RunDone> {
    if (this.stopped) return Promise.resolve({ result: { kind: "lost" }, logs: [], dropped: 0 });
    const index = hashOf(spec.key) % this.slots.length;
    const slot = this.slots[index] ?? (this.slots[index] = this.spawn());
    const run = ++this.nextRun;
    return new Promise<RunDone>((resolve) => {
      slot.runs.set(run, { spec, startedAt: performance.now(), resolve });
      void this.send(slot, run, !slot.sent.has(spec.key));
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.watchdog);
    for (const slot of this.live()) this.end(slot, null);
  }

  private live(): Slot[] {
    return this.slots.filter((slot): slot is Slot => slot !== null);
  }

  private spawn(): Slot {
    const board = new SharedArrayBuffer(8);
    const worker = new Worker(WORKER_URL.href);
    const slot: Slot = {
      worker,
      board: new Int32Array(board),
      runs: new Map(),
      sent: new Set(),
      seen: { counter: 0, since: 0 },
      retired: false,
    };
    const setup: WorkerSetup = {
      limits: this.options.limits,
      pool: this.options.pool,
      board,
      logLinesPerRequest: this.options.logLinesPerRequest,
      logLineChars: this.options.logLineChars,
    };
    worker.postMessage({ t: "setup", setup });
    worker.onmessage = (event: MessageEvent) => this.receive(slot, event.data as FromWorker);
    worker.onerror = (event) => {
      this.log.error("server code worker failed", { error: String((event as ErrorEvent).message ?? event) });
      this.replace(slot, null);
    };
    (worker as Worker & { unref?(): void }).unref?.();
    return slot;
  }

  private async send(slot: Slot, run: number, withSource: boolean): Promise<void> {
    const running = slot.runs.get(run);
    if (!running) return;
    let source: string | null = null;
    if (withSource) {
      try {
        source = await running.spec.loadSource();
      } catch (error) {
        this.log.error("server module could not be read", { key: running.spec.key, error });
        this.finish(slot, run, { result: { kind: "lost" }, logs: [], dropped: 0 });
        return;
      }
      if (slot.sent.size > 256) slot.sent.clear();
      slot.sent.add(running.spec.key);
    }
    const { spec } = running;
    this.post(slot, { t: "run", run, key: spec.key, filename: spec.filename, source, request: spec.request });
  }

  private post(slot: Slot, message: ToWorker): void {
    try {
      slot.worker.postMessage(message);
    } catch (error) {
      this.log.error("server code worker did not take a message", { error });
    }
  }

  private receive(slot: Slot, message: FromWorker): void {
    if (message.t === "ready") return;
    if (message.t === "need") {
      void this.send(slot, message.run, true);
      return;
    }
    if (message.t === "call") {
      const running = slot.runs.get(message.run);
      if (!running) return;
      running.spec.hostCall(message.op, message.body).then(
        (value) => this.post(slot, { t: "answer", run: message.run, call: message.call, ok: true, value }),
        (error: unknown) => {
          const known =
            error instanceof HostCallError
              ? error
              : new HostCallError("unavailable", "Hatch could not do this right now. Try again in a moment.");
          if (!(error instanceof HostCallError))
            this.log.error("server code host call failed", { op: String(message.op.op), error });
          this.post(slot, {
            t: "answer",
            run: message.run,
            call: message.call,
            ok: false,
            code: known.code,
            message: known.message,
            status: known.status,
          });
        },
      );
      return;
    }
    this.finish(slot, message.run, { result: message.result, logs: message.logs, dropped: message.dropped });
    if (message.crashed && !slot.retired) {
      this.log.error("server code sandbox crashed: worker replaced", { error: message.crashed });
      this.replace(slot, null, true);
    }
    if (!slot.retired && message.heap > (this.options.maxWorkerHeapBytes ?? 1024 * 1024 * 1024)) {
      this.log.warn("server code worker replaced: its memory grew large", { heapBytes: message.heap });
      this.replace(slot, null, true);
    }
    if (slot.retired && slot.runs.size === 0) slot.worker.terminate();
  }

  private finish(slot: Slot, run: number, done: RunDone): void {
    const running = slot.runs.get(run);
    if (!running) return;
    slot.runs.delete(run);
    running.resolve(done);
  }

  /** Puts a fresh worker in the slot's place. `gently`: the old one finishes its runs first. */
  private replace(slot: Slot, stuckRun: number | null, gently = false): void {
    const index = this.slots.indexOf(slot);
    if (index < 0 || this.stopped) return;
    this.slots[index] = this.spawn();
    if (gently) slot.retired = true;
    else this.end(slot, stuckRun);
  }

  /** Terminates a worker: the stuck run (if any) ends as a CPU kill, every other run it held is lost. */
  private end(slot: Slot, stuckRun: number | null): void {
    slot.retired = true;
    slot.worker.terminate();
    for (const run of [...slot.runs.keys()]) {
      this.finish(slot, run, { result: run === stuckRun ? { kind: "cpu" } : { kind: "lost" }, logs: [], dropped: 0 });
    }
  }

  private watch(): void {
    const now = performance.now();
    const stuckAfter = this.options.limits.cpuMs + (this.options.stuckGraceMs ?? 1000);
    for (const slot of this.live()) {
      if (slot.runs.size === 0) continue;
      const running = Atomics.load(slot.board, 0);
      const counter = Atomics.load(slot.board, 1);
      if (running === 0 || counter !== slot.seen.counter) {
        slot.seen = { counter, since: now };
      } else if (now - slot.seen.since > stuckAfter) {
        this.log.warn("server code worker stuck past the CPU limit: restarted", {
          key: slot.runs.get(running)?.spec.key ?? null,
        });
        this.replace(slot, running);
        continue;
      }
      // A worker that says nothing long after a request's wall time is gone in some way: start again.
      const overdue = [...slot.runs.values()].some((r) => now - r.startedAt > this.options.limits.wallMs + 5000);
      if (overdue) this.replace(slot, null);
    }
  }
}

/** FNV-1a: spreads app versions over the workers, the same worker for the same key while the set of workers stays. */
function hashOf(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}
