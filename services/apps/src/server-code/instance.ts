import type {
  QuickJSContext,
  QuickJSDeferredPromise,
  QuickJSHandle,
  QuickJSRuntime,
  QuickJSWASMModule,
} from "quickjs-emscripten";
import { threadCpuMs } from "./cpu-clock.ts";
import { hostObject } from "./host-functions.ts";
import { describeError, newJsonString, readReply, rejectWith, toHandle } from "./marshal.ts";
import { MemoryGuard } from "./memory-guard.ts";
import { PRELUDE } from "./prelude-env.ts";
import {
  HostCallError,
  ModuleLoadError,
  type HostCallResult,
  type LogLevel,
  type Outcome,
  type RequestHooks,
  type SandboxLimits,
} from "./types.ts";

// One warm copy of an app version's server code: a QuickJS runtime (own heap, memory limit, interrupt handler) with
// one context that holds the prelude and the evaluated module. It answers one request at a time (the pool sees to
// it). CPU time is counted only while QuickJS runs, on the worker thread's own CPU clock (cpu-clock.ts): before each
// entry (the dispatch call, each executePendingJobs) the deadline is set from what the request has left, and the
// interrupt handler stops the code past it. Waiting for a host call or a timer costs no CPU budget, only wall time.
// Loading charges the app only for its module: Hatch's prelude runs outside the budget.
//
// Every handle made while loading is disposed on every path: a handle left alive keeps an object on the runtime's GC
// list, and freeing the runtime then aborts the whole WebAssembly module (JS_FreeRuntime's assertion), which is what
// an interrupt during the first load used to do.

/** Timers one request may have pending at once. */
const MAX_TIMERS = 100;

interface Turn {
  seq: number;
  hooks: RequestHooks;
  cpuLeft: number;
  hostCallsLeft: number;
  /** Host calls in flight; their deferreds are disposed when the turn ends, so a late answer reaches nothing. */
  calls: Set<QuickJSDeferredPromise>;
  timers: Map<number, { timeout: ReturnType<typeof setTimeout>; deferred: QuickJSDeferredPromise }>;
  promise: QuickJSHandle | null;
  wall: ReturnType<typeof setTimeout> | null;
  done: boolean;
  finish(outcome: Outcome): void;
}

export class Instance {
  /** Set after a CPU, memory or wall-time kill, or when QuickJS itself failed: the pool throws the instance away. */
  broken = false;
  lastUsed = Date.now();
  private turn: Turn | null = null;
  private loading: Pick<Turn, "hooks" | "cpuLeft"> | null = null;
  private seq = 0;
  private deadline = Number.POSITIVE_INFINITY;
  /**
   * Whether the CPU deadline stopped code in the current phase (the module's load, or one request): then its error,
   * or a rejection it caused (an interrupt inside an async function rejects its promise), is a CPU kill.
   */
  private interrupted = false;
  private overMemory = false;
  private readonly memory: MemoryGuard;
  private entry: QuickJSHandle | null = null;
  private dispatch: QuickJSHandle | null = null;

  private constructor(
    module: QuickJSWASMModule,
    private readonly runtime: QuickJSRuntime,
    private readonly context: QuickJSContext,
    private readonly limits: SandboxLimits,
  ) {
    this.memory = new MemoryGuard(module, runtime, context, limits.memoryBytes);
  }

  /** Evaluates the prelude and the app's module. Throws ModuleLoadError (the instance is then already freed). */
  static create(
    module: QuickJSWASMModule,
    source: string,
    filename: string,
    limits: SandboxLimits,
    hooks: RequestHooks,
  ): Instance {
    const runtime = module.newRuntime();
    runtime.setMemoryLimit(limits.memoryBytes);
    runtime.setMaxStackSize(limits.stackBytes);
    runtime.setModuleLoader((name) => ({
      error: new Error(
        `import "${name}" is not available: Hatch server code is one file. Bundle your code and its packages into it (e.g. bun build --target=browser --format=esm).`,
      ),
    }));
    const instance = new Instance(module, runtime, runtime.newContext(), limits);
    runtime.setInterruptHandler(() => instance.shouldInterrupt());
    try {
      instance.load(source, filename, hooks);
    } catch (error) {
      instance.dispose();
      throw error;
    }
    return instance;
  }

  private shouldInterrupt(): boolean {
    (this.turn?.hooks ?? this.loading?.hooks)?.beat?.();
    const now = threadCpuMs();
    if (now > this.deadline) {
      this.interrupted = true;
      return true;
    }
    if (this.memory.over(now)) {
      this.overMemory = true;
      return true;
    }
    return false;
  }

  private load(source: string, filename: string, hooks: RequestHooks): void {
    try {
      this.loadPrelude(hooks);
      this.loadModule(source, filename, hooks);
    } finally {
      this.loading = null;
    }
  }

  /** Hatch's own prelude: the web globals and the dispatcher. Not charged to the app's CPU budget. */
  private loadPrelude(hooks: RequestHooks): void {
    const { context } = this;
    this.loading = { hooks, cpuLeft: Number.POSITIVE_INFINITY };
    const H = hostObject(context, {
      log: (seq, level, message) => this.log(seq, level, message),
      call: (seq, op, body) => this.call(seq, op, body),
      timer: (seq, id, ms) => this.timer(seq, id, ms),
      clearTimer: (seq, id) => this.clearTimer(seq, id),
    });
    try {
      const prelude = this.unwrapLoad(
        this.enter(this.loading, () => context.evalCode(PRELUDE, "hatch:prelude", { type: "global", strict: true })),
      );
      try {
        this.entry = this.unwrapLoad(
          this.enter(this.loading, () => context.callFunction(prelude, context.undefined, H)),
        );
      } finally {
        prelude.dispose();
      }
    } finally {
      H.dispose();
    }
    this.dispatch = context.getProp(this.entry, "dispatch");
  }

  /** The app's module, its top-level await, and handing its exports to the dispatcher: the app's CPU budget. */
  private loadModule(source: string, filename: string, hooks: RequestHooks): void {
    const { context } = this;
    const entry = this.entry!;
    this.loading = { hooks, cpuLeft: this.limits.cpuMs };
    this.interrupted = false;
    let exports = this.unwrapLoad(
      this.enter(this.loading, () => context.evalCode(source, filename, { type: "module" })),
    );
    try {
      const state = context.getPromiseState(exports);
      if (!(state as { notAPromise?: boolean }).notAPromise) {
        if (state.type === "fulfilled") state.value.dispose();
        if (state.type === "rejected") state.error.dispose();
        this.unwrapLoad(this.enter(this.loading, () => this.runtime.executePendingJobs(-1)));
        const settled = context.getPromiseState(exports);
        // An interrupt inside an async function rejects its promise; one in a reaction can leave the module pending.
        if (settled.type === "pending" && this.interrupted) throw this.cpuLoadError();
        if (settled.type === "pending")
          throw new ModuleLoadError(
            "The module's top-level await waits for something that never comes while it loads (env and timers exist only inside fetch).",
            null,
          );
        exports.dispose();
        exports = this.unwrapLoad(settled.type === "fulfilled" ? { value: settled.value } : { error: settled.error });
      }
      const install = context.getProp(entry, "install");
      try {
        this.unwrapLoad(this.enter(this.loading, () => context.callFunction(install, entry, exports))).dispose();
      } finally {
        install.dispose();
      }
    } finally {
      if (exports.alive) exports.dispose();
    }
    if (this.overMemory)
      throw new ModuleLoadError(
        `the module used more than ${this.limits.memoryBytes / 1024 / 1024} MB of memory while loading`,
        null,
        "memory",
      );
  }

  /** A load step's value, or the ModuleLoadError it stands for. */
  private unwrapLoad<T>(result: { value: T; error?: undefined } | { error: QuickJSHandle; value?: undefined }): T {
    if (!result.error) return result.value as T;
    const failure = this.classify(result.error);
    result.error.dispose();
    if (failure.kind === "cpu") throw this.cpuLoadError();
    if (failure.kind === "memory")
      throw new ModuleLoadError(
        `the module used more than ${this.limits.memoryBytes / 1024 / 1024} MB of memory while loading`,
        null,
        "memory",
      );
    throw new ModuleLoadError(
      failure.kind === "error" ? failure.message : "the module could not be loaded",
      failure.kind === "error" ? failure.stack : null,
    );
  }

  private cpuLoadError(): ModuleLoadError {
    return new ModuleLoadError(
      `the module's top level ran longer than ${this.limits.cpuMs} ms of CPU time`,
      null,
      "cpu",
    );
  }

  /**
   * Runs one request to its end. Never rejects. `meta`: the request without its body as JSON (SandboxRequest's
   * method, url, headers and viewer), passed into the sandbox as the text it is.
   */
  run(meta: string, body: Uint8Array | null, hooks: RequestHooks): Promise<Outcome> {
    const { context } = this;
    this.lastUsed = Date.now();
    return new Promise<Outcome>((resolve) => {
      const turn: Turn = {
        seq: ++this.seq,
        hooks,
        cpuLeft: this.limits.cpuMs,
        hostCallsLeft: this.limits.hostCalls,
        calls: new Set(),
        timers: new Map(),
        promise: null,
        wall: null,
        done: false,
        finish: (outcome) => this.finish(turn, outcome, resolve),
      };
      this.turn = turn;
      this.interrupted = false;
      turn.wall = setTimeout(() => turn.finish({ kind: "timeout" }), this.limits.wallMs);
      const args = [
        context.newNumber(turn.seq),
        newJsonString(context, meta),
        body ? context.newArrayBuffer(body as unknown as ArrayBuffer) : context.null,
      ];
      const result = this.enter(turn, () => context.callFunction(this.dispatch!, this.entry!, args));
      for (const arg of args) arg.dispose();
      if (result.error) {
        turn.finish(this.classify(result.error));
        result.error.dispose();
        return;
      }
      turn.promise = result.value;
      this.pump(turn);
      if (!turn.done) hooks.waiting?.();
    });
  }

  /** Runs the queued jobs under the CPU deadline, then sees whether the request is answered. */
  private pump(turn: Turn): void {
    for (;;) {
      if (turn.done) return;
      const result = this.enter(turn, () => this.runtime.executePendingJobs(-1));
      if (!result.error) break;
      const failure = this.classify(result.error);
      result.error.dispose();
      if (failure.kind !== "error") return turn.finish(failure);
    }
    this.settle(turn);
  }

  private settle(turn: Turn): void {
    if (turn.done) return;
    if (this.overMemory) return turn.finish({ kind: "memory" });
    if (this.interrupted || turn.cpuLeft <= 0) return turn.finish({ kind: "cpu" });
    const state = this.context.getPromiseState(turn.promise!);
    if (state.type === "pending") {
      if (turn.calls.size === 0 && turn.timers.size === 0) turn.finish({ kind: "stalled" });
      return;
    }
    if (state.type === "rejected") {
      const failure = this.classify(state.error);
      state.error.dispose();
      return turn.finish(failure);
    }
    let outcome: Outcome;
    try {
      outcome = { kind: "ok", reply: readReply(this.context, state.value) };
    } catch {
      outcome = { kind: "memory" };
    }
    state.value.dispose();
    turn.finish(outcome);
  }

  /** What an error thrown inside QuickJS means: a CPU or memory kill, or the app's own error. */
  private classify(error: QuickJSHandle): Outcome {
    if (this.overMemory) return { kind: "memory" };
    if (this.interrupted) return { kind: "cpu" };
    return describeError(this.context, error);
  }

  private enter<T>(budget: { cpuLeft: number }, run: () => T): T {
    const start = threadCpuMs();
    this.memory.entered(start);
    this.deadline = start + Math.max(0, budget.cpuLeft);
    const hooks = this.turn?.hooks ?? this.loading?.hooks;
    hooks?.watch?.(true);
    try {
      return run();
    } finally {
      hooks?.watch?.(false);
      const end = threadCpuMs();
      budget.cpuLeft -= end - start;
      hooks?.spent?.(end - start);
      this.deadline = Number.POSITIVE_INFINITY;
      // A native call that allocated a lot may have run without an interrupt check: measure on the way out too.
      if (!this.overMemory && this.memory.over(end)) this.overMemory = true;
      this.memory.left(end);
    }
  }

  private finish(turn: Turn, outcome: Outcome, resolve: (outcome: Outcome) => void): void {
    if (turn.done) return;
    turn.done = true;
    if (turn.wall) clearTimeout(turn.wall);
    for (const { timeout, deferred } of turn.timers.values()) {
      clearTimeout(timeout);
      deferred.dispose();
    }
    for (const deferred of turn.calls) deferred.dispose();
    turn.timers.clear();
    turn.calls.clear();
    turn.promise?.dispose();
    if (this.turn === turn) this.turn = null;
    if (outcome.kind !== "ok" && outcome.kind !== "error") this.broken = true;
    this.lastUsed = Date.now();
    resolve(outcome);
  }

  private active(seq: number): Turn | null {
    const turn = this.turn;
    return turn && turn.seq === seq && !turn.done ? turn : null;
  }

  private log(seq: number, level: LogLevel, message: string): void {
    const hooks = seq === 0 ? this.loading?.hooks : this.active(seq)?.hooks;
    hooks?.log(level, message);
  }

  private call(seq: number, op: string, body: Uint8Array | null): QuickJSHandle {
    const { context } = this;
    const turn = this.active(seq);
    const deferred = context.newPromise();
    const handle = deferred.handle;
    const refuse = (code: string, message: string) => {
      rejectWith(this.context, deferred, new HostCallError(code, message));
      return handle;
    };
    if (!turn)
      return refuse(
        "invalid",
        "This env belongs to a request that has ended: use the env passed to the current fetch(request, env), not one kept from an earlier request.",
      );
    if (--turn.hostCallsLeft < 0)
      return refuse(
        "limit_exceeded",
        `One request may make at most ${this.limits.hostCalls} env calls (env.db, env.files, env.api, env.ai).`,
      );
    turn.calls.add(deferred);
    turn.hooks.hostCall(op, body).then(
      (value) => this.answer(turn, deferred, value, null),
      (error: unknown) => this.answer(turn, deferred, null, error),
    );
    return handle;
  }

  private answer(turn: Turn, deferred: QuickJSDeferredPromise, value: HostCallResult | null, error: unknown): void {
    if (turn.done || !turn.calls.delete(deferred)) return;
    // An answer that is not JSON is Hatch's failure: the sandbox hears `unavailable`, as for any unexpected error.
    // Rewriting the text (marshal.ts) is work the sandbox would otherwise do: the app's CPU budget pays for it.
    const start = threadCpuMs();
    const handle = error === null && value !== null ? toHandle(this.context, value) : null;
    turn.hooks.spent?.(threadCpuMs() - start);
    if (handle) handle.consume((h) => deferred.resolve(h));
    else rejectWith(this.context, deferred, error);
    this.pump(turn);
  }

  private timer(seq: number, id: number, ms: number): QuickJSHandle {
    const turn = this.active(seq);
    if (!turn)
      throw new TypeError(
        seq === 0
          ? "Timers exist only while a request runs: start them inside fetch(request, env)."
          : "This timer belongs to a request that has ended.",
      );
    if (turn.timers.size >= MAX_TIMERS)
      throw new RangeError(`One request may have at most ${MAX_TIMERS} timers pending at once.`);
    const deferred = this.context.newPromise();
    const handle = deferred.handle;
    // A timer never outlives its request: past the wall time the request has ended and the timer is cleared.
    const timeout = setTimeout(
      () => {
        if (turn.done || turn.timers.get(id)?.deferred !== deferred) return;
        turn.timers.delete(id);
        deferred.resolve();
        this.pump(turn);
      },
      Math.min(Math.max(0, ms), this.limits.wallMs),
    );
    turn.timers.get(id)?.deferred.dispose();
    turn.timers.set(id, { timeout, deferred });
    return handle;
  }

  private clearTimer(seq: number, id: number): void {
    const turn = this.active(seq);
    const timer = turn?.timers.get(id);
    if (!turn || !timer) return;
    clearTimeout(timer.timeout);
    timer.deferred.dispose();
    turn.timers.delete(id);
  }

  /** Frees the runtime. A request still running ends as timed out (only the service's stop does that). */
  dispose(): void {
    this.turn?.finish({ kind: "timeout" });
    this.broken = true;
    this.dispatch?.dispose();
    this.entry?.dispose();
    this.dispatch = this.entry = null;
    this.context.dispose();
    this.runtime.dispose();
  }
}
