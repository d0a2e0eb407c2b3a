import type { PoolOptions } from "./pool.ts";
import type { HostCallResult, LogLevel, Outcome, SandboxLimits } from "./types.ts";

// Messages between the app host (main thread) and a sandbox worker. Host calls travel back to the main thread,
// which holds the database, the blob store and the outbound clients; the worker holds only QuickJS.
//
// Every message after the setup is a flat array of strings, numbers and bytes: Bun copies those several times
// cheaper than nested objects (which it walks and rebuilds field by field), and the JSON texts in them (a request's
// meta, a host call's op and answer) are passed along as the text they already are, parsed only where read.

export interface WorkerSetup {
  limits: SandboxLimits;
  pool: PoolOptions;
  /**
   * [run being executed (0: none), entries and interrupt checks so far, the worker thread's id (0: unknown)]: the
   * watchdog reads it to find a worker stuck inside one built-in (no interrupt check for too long).
   */
  board: SharedArrayBuffer;
  logLinesPerRequest: number;
  logLineChars: number;
  /** The worker thread's OS priority (a nice value; quarantine workers run at the lowest, 19). */
  nice: number;
}

export type ToWorker =
  /** `meta`: the request's method, url, headers and viewer as JSON (SandboxRequest without its body). */
  | [t: "run", run: number, key: string, filename: string, source: string | null, meta: string, body: Uint8Array | null]
  | [t: "answer", run: number, call: number, value: HostCallResult]
  | [t: "refuse", run: number, call: number, code: string, message: string, status: number];

export type RunResult =
  | Outcome
  | { kind: "load"; message: string; stack: string | null; limit: "cpu" | "memory" | null }
  /**
   * The request ended without an answer through no fault of its own code, unless `cause` is "own": another request of
   * the same app got its worker stopped. `calls`: the env calls it had made (their effects may stand).
   */
  | { kind: "lost"; cause: LostCause; calls: number }
  /** The app used its CPU budget (fairness.ts): not run; it may run again after this long. */
  | { kind: "throttled"; waitMs: number; first: boolean };

/**
 * Why a request was lost. Hatch's: "replaced" (its worker was stopped for another app's code, or failed), "engine"
 * (QuickJS itself failed), "source" (Hatch could not read the module), "stopping" (the app host was stopping). The
 * app's: "own" (another request of this app was stuck past the CPU limit, and its worker was stopped with it).
 */
export type LostCause = "replaced" | "engine" | "source" | "stopping" | "own";

/** How a run ended, as the worker tells it (the JSON of a "done" message; an ok reply's body travels beside it). */
export interface RunEnd {
  result: RunResult;
  logs: [LogLevel, string][];
  dropped: number;
  heap: number;
  /** The worker thread's CPU time the run used, its module load included. */
  cpuMs: number;
  /** QuickJS failed inside the worker (not the app's error): the worker is replaced. */
  crashed?: string;
}

export type FromWorker =
  | [t: "ready"]
  /** The worker has no source for this version (evicted or never sent): send the run again with it. */
  | [t: "need", run: number]
  /**
   * The run's code has run and waits (a host call or a timer): from now on it cannot be sent to another worker. Told
   * only of a run that was not answered in its first entry into QuickJS: while inside that entry it is the run on the
   * board (the one a stuck worker is stopped for), and before it, none of its code has run.
   */
  | [t: "started", run: number]
  /** `op`: the env call as JSON. */
  | [t: "call", run: number, call: number, op: string, body: Uint8Array | null]
  /** `end`: a RunEnd as JSON whose ok reply has no body; `body` is that reply's body. */
  | [t: "done", run: number, end: string, body: string | Uint8Array | null];
