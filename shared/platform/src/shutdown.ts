import type { Logger } from "./logger.ts";
import { withDeadlineOr } from "./deadline.ts";

// Bounded, graceful shutdown for every process (gateway, services, dev, cluster). The steps run in order, each
// within its share of the deadline, so one that hangs (a drain against a NATS server that went away, a pool waiting
// on a dead Postgres) still leaves time for the ones after it; a hard timer exits whatever is still running, with a
// logged reason, and a second signal exits at once.

/** Default of SHUTDOWN_TIMEOUT_MS: under Docker's and Kubernetes' 10 s / 30 s grace before they kill. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;

/** Exit codes: a clean stop; the deadline passed; a second signal (128 + signal number, as shells report). */
export const EXIT_CODES = { clean: 0, deadline: 1, SIGINT: 130, SIGTERM: 143 } as const;

export interface ShutdownStep {
  /** Named in the log, and in the reason when the deadline passes during this step. */
  name: string;
  run(): Promise<unknown> | unknown;
  /**
   * The part of the whole deadline this step may take (0..1); past it the next step starts anyway. Default: all
   * that is left. Give a step that may hang on an outside system (bus drain, database close) a share.
   */
  share?: number;
}

export interface ShutdownOptions {
  logger: Logger;
  timeoutMs: number;
  steps: ShutdownStep[];
  /** Tests and launchers pass their own; default process.exit. */
  exit?: (code: number) => void;
  /** Runs when the process exits before its steps are done, on a second signal or at the deadline (a launcher kills its children hard). */
  onForce?: () => void;
  /**
   * A launcher's pid: when it goes away (killed, crashed), this process shuts down as if signalled, so no copy is
   * left running without its parent. Read from HATCH_PARENT_PID by the mains.
   */
  parentPid?: number;
}

export interface Shutdown {
  /** Starts the shutdown (as a signal would); a second call exits at once. */
  trigger(reason: string): void;
  /** Resolves when the steps have run (before exit). */
  readonly done: Promise<void>;
}

/** Installs SIGINT and SIGTERM handlers that run `steps` once, bounded by `timeoutMs`, then exit. */
export function onShutdown(options: ShutdownOptions): Shutdown {
  const { logger, timeoutMs } = options;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let started = false;
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  let current = "starting";

  const run = async (reason: string) => {
    const begun = Date.now();
    logger.info("shutting down", { reason, timeoutMs });
    // Not unref'd: this timer is what guarantees the exit.
    const deadline = () => {
      logger.error("shutdown deadline passed: exiting with work unfinished", {
        timeoutMs,
        step: current,
        reason: `the step "${current}" did not finish`,
      });
      options.onForce?.();
      exit(EXIT_CODES.deadline);
    };
    const hard = setTimeout(deadline, timeoutMs);
    for (const step of options.steps) {
      current = step.name;
      const left = timeoutMs - (Date.now() - begun);
      const budget = Math.max(0, Math.min(left, step.share === undefined ? left : step.share * timeoutMs));
      const outcome = await within(step, budget);
      // A step without a share had the rest of the deadline: late means the deadline passed, whichever timer fired first.
      if (outcome === "late" && step.share === undefined) {
        clearTimeout(hard);
        deadline();
        return;
      }
      if (outcome === "late")
        logger.warn("shutdown step did not finish in its time; going on", { step: step.name, ms: Math.round(budget) });
      else if (outcome !== "ok") logger.warn("shutdown step failed; going on", { step: step.name, error: outcome });
    }
    clearTimeout(hard);
    logger.info("stopped", { ms: Date.now() - begun });
    finish();
    exit(EXIT_CODES.clean);
  };

  const trigger = (reason: string, code: number = EXIT_CODES.SIGTERM) => {
    if (started) {
      logger.warn("second signal: exiting at once", { reason, step: current });
      options.onForce?.();
      exit(code);
      return;
    }
    started = true;
    void run(reason);
  };
  process.on("SIGINT", () => trigger("SIGINT", EXIT_CODES.SIGINT));
  process.on("SIGTERM", () => trigger("SIGTERM", EXIT_CODES.SIGTERM));
  if (options.parentPid) watchParent(options.parentPid, () => trigger("parent process exited"));
  return { trigger: (reason) => trigger(reason), done };
}

async function within(step: ShutdownStep, ms: number): Promise<"ok" | "late" | unknown> {
  const run = Promise.resolve()
    .then(() => step.run())
    .then(() => "ok" as const);
  try {
    return await withDeadlineOr(run, ms, "late" as const);
  } catch (error) {
    return error;
  }
}

/** Polls for the parent: Linux gives an orphan a new parent (init or a subreaper), and a gone pid refuses signal 0. */
function watchParent(pid: number, gone: () => void): void {
  const timer = setInterval(() => {
    let alive = process.ppid === pid;
    if (alive) {
      try {
        process.kill(pid, 0);
      } catch {
        alive = false;
      }
    }
    if (!alive) {
      clearInterval(timer);
      gone();
    }
  }, 500);
  timer.unref();
}

/** The launcher's pid when it asked its children to follow it (HATCH_PARENT_PID), else undefined. */
export function parentPidFrom(env: Record<string, string | undefined>): number | undefined {
  const pid = Number(env.HATCH_PARENT_PID);
  return Number.isInteger(pid) && pid > 1 ? pid : undefined;
}
