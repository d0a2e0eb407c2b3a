import type { Logger } from "../logger.ts";

// The one loop behind every "claim a batch of due rows, handle them, again while there may be more" worker (the
// outbox relay, orgs' mailer): one pass at a time per process, a run asked for during a pass gets one more pass after
// it, a poll timer for what becomes due later, and a stop that waits for the pass in flight. Rows are claimed by the
// pass itself (FOR UPDATE SKIP LOCKED, under a lease where the work outlives the transaction), so copies share them.

export interface BatchLoopOptions {
  /** One batch: answers whether it was full (so there may be more due at once). */
  pass: () => Promise<boolean>;
  /** How often an idle process looks for due rows. */
  pollMs: number;
  logger: Logger;
  /** The warning logged when a pass throws (the rows stay due and the next poll tries again). */
  failure: string;
}

export interface BatchLoop {
  /** Runs passes until a batch is not full; resolves when done (never throws). */
  run(): Promise<void>;
  start(): void;
  stop(): Promise<void>;
}

export function createBatchLoop(options: BatchLoopOptions): BatchLoop {
  let running: Promise<void> | null = null;
  let again = false;
  let timer: ReturnType<typeof setInterval> | undefined;

  async function drain(): Promise<void> {
    do {
      again = false;
      try {
        while (await options.pass()) {
          // A full batch: there may be more.
        }
      } catch (error) {
        options.logger.warn(options.failure, { error });
      }
    } while (again);
  }

  function run(): Promise<void> {
    if (running) {
      again = true;
      return running;
    }
    running = drain().finally(() => {
      running = null;
    });
    return running;
  }

  return {
    run,
    start() {
      if (timer) return;
      timer = setInterval(() => void run(), options.pollMs);
      timer.unref?.();
      void run();
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
}
