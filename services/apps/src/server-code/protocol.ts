import type { PoolOptions } from "./pool.ts";
import type { HostCallResult, LogLevel, Outcome, SandboxLimits, SandboxRequest } from "./types.ts";

// Messages between the app host (main thread) and a sandbox worker. Host calls travel back to the main thread,
// which holds the database, the blob store and the outbound clients; the worker holds only QuickJS.

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
  | { t: "run"; run: number; key: string; filename: string; source: string | null; request: SandboxRequest }
  | { t: "answer"; run: number; call: number; ok: true; value: HostCallResult }
  | { t: "answer"; run: number; call: number; ok: false; code: string; message: string; status: number };

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

export type FromWorker =
  | { t: "ready" }
  /** The worker has no source for this version (evicted or never sent): send the run again with it. */
  | { t: "need"; run: number }
  /** The run's instance is ready and its code about to run: from now on it cannot be sent to another worker. */
  | { t: "started"; run: number }
  | { t: "call"; run: number; call: number; op: Record<string, unknown>; body: Uint8Array | null }
  | {
      t: "done";
      run: number;
      result: RunResult;
      logs: [LogLevel, string][];
      dropped: number;
      heap: number;
      /** The worker thread's CPU time the run used, its module load included. */
      cpuMs: number;
      /** QuickJS failed inside the worker (not the app's error): the worker is replaced. */
      crashed?: string;
    };
