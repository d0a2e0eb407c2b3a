import type { Logger } from "@hatch/platform";
import { otherThreadsCpuMs, threadCpuMsOf } from "./cpu-clock.ts";
import { Fairness, type FairnessOptions } from "./fairness.ts";
import type { PoolOptions } from "./pool.ts";
import type { FromWorker, LostCause, RunEnd, RunResult, ToWorker, WorkerSetup } from "./protocol.ts";
import { HostCallError, type HostCallResult, type LogLevel, type SandboxLimits, type SandboxRequest } from "./types.ts";

// The app host's side of the sandbox workers. Each app version goes to one worker (by a hash of its key), where its
// warm instances live. A watchdog reads each worker's board (which request is inside QuickJS, and how many entries and
// interrupt checks so far, and its thread's id): a worker inside one entry with no interrupt check for longer than the
// CPU limit plus a grace, in wall time and in its own thread's CPU time (on a busy machine a worker waiting for a core,
// or compiling in a cold WebAssembly tier, is not stuck; where that thread's time cannot be read, the CPU time of the
// process's threads other than this one stands in), is stuck in a built-in that starved the interrupt handler, and is
// terminated (code that reaches its checks is stopped by the CPU
// deadline in the worker, on the thread's CPU clock, however slow the machine); the request
// that was running ends as a CPU kill; the runs it held that had not started go to the fresh worker (they never ran
// any code), those that had are lost (they answer 503: Hatch's failure, a retry is safe, unless the stuck request was
// their own app's). A worker whose WebAssembly memory grew past a
// bound, or where QuickJS itself failed, is replaced once idle.
//
// One app's code cannot hurt another's (fairness.ts): an app over its CPU budget is refused before it reaches a
// worker (429), and an app whose code was stopped by a limit, or that went over its budget, runs on quarantine
// workers, apart from the others, so neither its CPU-bound requests nor the watchdog's kills reach the apps on the
// shared workers. Quarantine workers run at the lowest OS priority (nice 19, the thread's own on Linux): on a busy
// machine the shared workers and the app host's own thread get the cores first, and a quarantined app the rest.

export interface RunnerOptions {
  workers: number;
  /** Workers for apps in quarantine (each started on its first request). */
  quarantineWorkers?: number;
  fairness: FairnessOptions;
  limits: SandboxLimits;
  pool: PoolOptions;
  logLinesPerRequest: number;
  logLineChars: number;
  /** Beyond the CPU limit, how long one entry may run before its worker is terminated. */
  stuckGraceMs?: number;
  /** WebAssembly memory of one worker beyond which it is replaced (memory never shrinks inside a worker). */
  maxWorkerHeapBytes?: number;
  /** The worker's module (tests start one that cannot load). */
  workerUrl?: URL;
}

export interface RunDone {
  result: RunResult;
  logs: [LogLevel, string][];
  dropped: number;
}

export interface RunSpec {
  /** The app's id: its CPU budget and quarantine. */
  app: string;
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
  /**
   * Its code ran and waits (the worker said so, or it made an env call): it cannot be sent to another worker any
   * more. A run inside its first entry is not marked, but it is then the run on the board, the one a stuck worker is
   * stopped for.
   */
  started: boolean;
  /** Env calls it made: a lost run says how many (their effects may stand). */
  calls: number;
  resolve(done: RunDone): void;
}

const lost = (cause: LostCause, calls = 0): RunDone => ({
  result: { kind: "lost", cause, calls },
  logs: [],
  dropped: 0,
});

interface Slot {
  /** The list it belongs to: the shared workers or the quarantine workers. */
  group: (Slot | null)[];
  worker: Worker;
  board: Int32Array;
  runs: Map<number, Running>;
  /** Keys whose source this worker was sent (it may have evicted some; it then asks again). */
  sent: Set<string>;
  /** The board's counter when it last moved, and the wall clock and the worker thread's CPU time then. */
  seen: { counter: number; since: number; cpu: number };
  retired: boolean;
  /** It loaded QuickJS and said so. */
  ready: boolean;
}

const WORKER_URL = new URL("./worker.ts", import.meta.url);
/** Workers that failed before they were ready, one after another, before the runner stops starting them for a while. */
const START_ATTEMPTS = 3;
const START_PAUSE_MS = { first: 1_000, max: 30_000 };

export class SandboxRunner {
  /** A worker per slot, started on the slot's first request (an app host without server code starts none). */
  private readonly slots: (Slot | null)[];
  private readonly quarantine: (Slot | null)[];
  private readonly fairness: Fairness;
  private nextRun = 0;
  /** Workers that failed to start since one last did; while `pausedUntil` is ahead, runs are lost at once. */
  private startFailures = 0;
  private pausedUntil = 0;
  private readonly watchdog: ReturnType<typeof setInterval>;
  private stopped = false;

  constructor(
    private readonly options: RunnerOptions,
    private readonly log: Logger,
  ) {
    if (options.workers < 1) throw new Error("SandboxRunner: workers must be at least 1");
    this.slots = Array.from({ length: options.workers }, () => null);
    this.quarantine = Array.from({ length: Math.max(1, options.quarantineWorkers ?? 1) }, () => null);
    this.fairness = new Fairness(options.fairness);
    this.watchdog = setInterval(() => this.watch(), 100);
    this.watchdog.unref?.();
  }

  run(spec: RunSpec): Promise<RunDone> {
    if (this.stopped) return Promise.resolve(lost("stopping"));
    const refused = this.fairness.refusal(spec.app);
    // An app over its CPU budget is the heavy one: its next runs go to quarantine too.
    if (refused?.first) this.fairness.stopped(spec.app);
    if (refused) return Promise.resolve({ result: { kind: "throttled", ...refused }, logs: [], dropped: 0 });
    return new Promise<RunDone>((resolve) =>
      this.dispatch(++this.nextRun, { spec, startedAt: performance.now(), started: false, calls: 0, resolve }),
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.watchdog);
    for (const slot of this.live()) this.end(slot, null, false, "stopping");
  }

  /** Sends a run to its worker: a shared one by its version, or, while its app is in quarantine, a quarantine one. */
  private dispatch(run: number, running: Running): void {
    if (performance.now() < this.pausedUntil) return running.resolve(lost("engine", running.calls));
    const { spec } = running;
    const quarantined = this.fairness.isQuarantined(spec.app);
    const group = quarantined ? this.quarantine : this.slots;
    const index = hashOf(quarantined ? spec.app : spec.key) % group.length;
    const slot = group[index] ?? (group[index] = this.spawn(group));
    slot.runs.set(run, running);
    if (slot.runs.size === 1) holdOpen(slot.worker, true);
    void this.send(slot, run, !slot.sent.has(spec.key));
  }

  private live(): Slot[] {
    return [...this.slots, ...this.quarantine].filter((slot): slot is Slot => slot !== null);
  }

  private spawn(group: (Slot | null)[]): Slot {
    // [the run inside QuickJS or 0, entries and interrupt checks so far, the worker thread's id]
    const board = new SharedArrayBuffer(12);
    const worker = new Worker((this.options.workerUrl ?? WORKER_URL).href);
    const slot: Slot = {
      group,
      worker,
      board: new Int32Array(board),
      runs: new Map(),
      sent: new Set(),
      seen: { counter: 0, since: 0, cpu: 0 },
      retired: false,
      ready: false,
    };
    const setup: WorkerSetup = {
      limits: this.options.limits,
      pool: this.options.pool,
      board,
      logLinesPerRequest: this.options.logLinesPerRequest,
      logLineChars: this.options.logLineChars,
      nice: group === this.quarantine ? 10 : 0,
    };
    worker.postMessage({ t: "setup", setup });
    worker.onmessage = (event: MessageEvent) => this.receive(slot, event.data as FromWorker);
    worker.onerror = (event) => {
      const error = String((event as ErrorEvent).message ?? event);
      if (slot.ready) {
        this.log.error("server code worker failed", { error });
        this.replace(slot, null, false, true);
      } else this.startFailed(slot, error);
    };
    holdOpen(worker, false);
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
        this.finish(slot, run, lost("source"));
        return;
      }
      if (slot.sent.size > 256) slot.sent.clear();
      slot.sent.add(running.spec.key);
    }
    const { spec } = running;
    const { method, url, headers, viewer, body } = spec.request;
    const meta = JSON.stringify({ method, url, headers, viewer });
    this.post(slot, ["run", run, spec.key, spec.filename, source, meta, body]);
  }

  private post(slot: Slot, message: ToWorker): void {
    try {
      slot.worker.postMessage(message);
    } catch (error) {
      this.log.error("server code worker did not take a message", { error });
    }
  }

  private receive(slot: Slot, message: FromWorker): void {
    switch (message[0]) {
      case "ready":
        slot.ready = true;
        this.startFailures = 0;
        return;
      case "started": {
        const running = slot.runs.get(message[1]);
        if (running) running.started = true;
        return;
      }
      case "need":
        void this.send(slot, message[1], true);
        return;
      case "call":
        return this.call(slot, message[1], message[2], message[3], message[4]);
      case "done":
        return this.done(slot, message[1], JSON.parse(message[2]) as RunEnd, message[3]);
    }
  }

  /** Answers an env call of a run (the op as the sandbox wrote it: JSON, refused when it is not an object). */
  private call(slot: Slot, run: number, call: number, opText: string, body: Uint8Array | null): void {
    const running = slot.runs.get(run);
    if (!running) return;
    running.started = true;
    running.calls++;
    let op: Record<string, unknown> | null = null;
    try {
      const parsed = JSON.parse(opText) as unknown;
      if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed))
        op = parsed as Record<string, unknown>;
    } catch {
      // Not JSON: refused below.
    }
    const answer = op
      ? running.spec.hostCall(op, body)
      : Promise.reject(new HostCallError("invalid", "Unknown env call.", 400));
    answer.then(
      (value) => this.post(slot, ["answer", run, call, value]),
      (error: unknown) => {
        const known =
          error instanceof HostCallError
            ? error
            : new HostCallError("unavailable", "Hatch could not do this right now. Try again in a moment.");
        if (!(error instanceof HostCallError))
          this.log.error("server code host call failed", { op: String(op?.op), error });
        this.post(slot, ["refuse", run, call, known.code, known.message, known.status]);
      },
    );
  }

  private done(slot: Slot, run: number, end: RunEnd, body: string | Uint8Array | null): void {
    const running = slot.runs.get(run);
    const { result } = end;
    if (result.kind === "ok") result.reply.body = body;
    if (running) {
      this.fairness.charge(running.spec.app, end.cpuMs);
      if (result.kind === "lost") result.calls = running.calls;
      if (result.kind === "cpu" || result.kind === "memory" || (result.kind === "load" && result.limit !== null))
        this.fairness.stopped(running.spec.app);
    }
    this.finish(slot, run, { result, logs: end.logs, dropped: end.dropped });
    if (end.crashed && !slot.retired) {
      this.log.error("server code sandbox crashed: worker replaced", { error: end.crashed });
      this.replace(slot, null, true);
    }
    if (!slot.retired && end.heap > (this.options.maxWorkerHeapBytes ?? 1024 * 1024 * 1024)) {
      this.log.warn("server code worker replaced: its memory grew large", { heapBytes: end.heap });
      this.replace(slot, null, true);
    }
    if (slot.retired && slot.runs.size === 0) slot.worker.terminate();
  }

  private finish(slot: Slot, run: number, done: RunDone): void {
    const running = slot.runs.get(run);
    if (!running) return;
    slot.runs.delete(run);
    if (slot.runs.size === 0) holdOpen(slot.worker, false);
    running.resolve(done);
  }

  /**
   * A worker failed before QuickJS was loaded: a fresh one takes its runs, but after a few such failures in a row (the
   * engine itself cannot load, say) none is started for a while, doubling each time: its runs and every run meanwhile
   * are lost at once (503, a retry is safe) instead of waiting on workers that fail as they start.
   */
  private startFailed(slot: Slot, error: string): void {
    this.startFailures++;
    if (this.startFailures < START_ATTEMPTS) {
      this.log.error("server code worker failed to start: starting another", { error });
      return this.replace(slot, null, false, true);
    }
    const pauseMs = Math.min(START_PAUSE_MS.max, START_PAUSE_MS.first * 2 ** (this.startFailures - START_ATTEMPTS));
    this.log.error("server code workers fail to start: requests to server code are refused for a while", {
      error,
      attempts: this.startFailures,
      pauseMs,
    });
    this.pausedUntil = performance.now() + pauseMs;
    const index = slot.group.indexOf(slot);
    if (index >= 0) slot.group[index] = null;
    this.end(slot, null, false, "engine");
  }

  /**
   * Puts a fresh worker in the slot's place. `gently`: the old one finishes its runs first. Otherwise it is
   * terminated; `resend`: its runs that had not started go to the fresh worker.
   */
  private replace(slot: Slot, stuckRun: number | null, gently = false, resend = false): void {
    const index = slot.group.indexOf(slot);
    if (index < 0 || this.stopped) return;
    slot.group[index] = this.spawn(slot.group);
    if (gently) slot.retired = true;
    else this.end(slot, stuckRun, resend);
  }

  /**
   * Terminates a worker. The stuck run (if any) ends as a CPU kill, its app charged and sent to quarantine; runs
   * that had not started are sent again (`resend`) or lost; runs that had started are lost.
   */
  private end(slot: Slot, stuckRun: number | null, resend: boolean, cause: LostCause = "replaced", stuckMs = 0): void {
    slot.retired = true;
    slot.worker.terminate();
    const stuck = stuckRun === null ? undefined : slot.runs.get(stuckRun);
    if (stuck) {
      this.fairness.stuck(stuck.spec.app, stuckMs);
      this.finish(slot, stuckRun!, { result: { kind: "cpu" }, logs: [], dropped: 0 });
    }
    for (const [run, running] of [...slot.runs]) {
      slot.runs.delete(run);
      if (resend && !running.started) this.dispatch(run, running);
      // Stopped for its own app's stuck request, the app's doing; for another app's or Hatch's, not.
      else running.resolve(lost(stuck && stuck.spec.app === running.spec.app ? "own" : cause, running.calls));
    }
  }

  private watch(): void {
    const now = performance.now();
    const others = otherThreadsCpuMs() ?? now;
    const stuckAfter = this.options.limits.cpuMs + (this.options.stuckGraceMs ?? 1000);
    for (const slot of this.live()) {
      if (slot.runs.size === 0) continue;
      const running = Atomics.load(slot.board, 0);
      const counter = Atomics.load(slot.board, 1);
      const cpu = threadCpuMsOf(Atomics.load(slot.board, 2)) ?? others;
      const inEntry = running !== 0 && counter === slot.seen.counter;
      if (!inEntry) {
        slot.seen = { counter, since: now, cpu };
      } else if (now - slot.seen.since > stuckAfter && cpu - slot.seen.cpu > stuckAfter) {
        this.log.warn("server code worker stuck past the CPU limit: restarted", {
          key: slot.runs.get(running)?.spec.key ?? null,
        });
        const index = slot.group.indexOf(slot);
        if (index >= 0 && !this.stopped) {
          slot.group[index] = this.spawn(slot.group);
          this.end(slot, running, true, "replaced", Math.min(now - slot.seen.since, cpu - slot.seen.cpu));
        }
        continue;
      }
      // A worker that says nothing long after a request's wall time is gone in some way: start again. One inside an
      // entry is the rule above's to judge by its CPU time (a busy machine may take long to give it that much); only
      // far past any plausible wait is it taken for gone.
      const grace = inEntry ? OVERDUE_IN_ENTRY_MS : OVERDUE_MS;
      const overdue = [...slot.runs.values()].some((r) => now - r.startedAt > this.options.limits.wallMs + grace);
      if (overdue) this.replace(slot, null);
    }
  }
}

/** How long past a request's wall time a silent worker is taken for gone. */
const OVERDUE_MS = 5_000;
/** The same for a worker inside one entry, whose thread's CPU time the stuck rule is still waiting for. */
const OVERDUE_IN_ENTRY_MS = 60_000;

/**
 * Whether a worker keeps the process alive: only while it has runs. An idle one does not (an app host without server
 * traffic stops as if it had none), but a busy one must: while Bun waits for a message from an unreferenced worker,
 * its event loop spins instead of sleeping (measured: a fifth of a core per request waiting, and three times the
 * latency, on the app host's own thread).
 */
function holdOpen(worker: Worker, hold: boolean): void {
  const handle = worker as Worker & { ref?(): void; unref?(): void };
  if (hold) handle.ref?.();
  else handle.unref?.();
}

/** FNV-1a: spreads app versions over the workers, the same worker for the same key while the set of workers stays. */
function hashOf(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}
