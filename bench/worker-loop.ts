// What both load workers (MCP and raw HTTP) share: waiting for the parent's start signal, and the timed loop
// of one client that sorts each call into warmup, error or measured latency.
export interface WorkerResult {
  /** Latency in ms of every call that completed inside the measured window. */
  latencies: number[];
  errors: number;
  firstError?: string;
  /** Calls made during the warmup (not counted). */
  warmupCalls: number;
  /** How the server answered the POSTs: plain JSON or an SSE stream. */
  answers: { json: number; sse: number };
}

/** Waits for `GO <epoch ms>` on stdin: the moment every worker starts measuring together. */
export async function readGo(): Promise<number> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of Bun.stdin.stream()) {
    text += decoder.decode(chunk, { stream: true });
    const match = /GO (\d+)\n/.exec(text);
    if (match) return Number(match[1]);
  }
  throw new Error("stdin closed before GO");
}

/**
 * One client's loop until `measureUntil` (this process's performance clock). `call` resolves to undefined on
 * success or to what went wrong; a failure for which `fatal` is true ends this client's loop.
 */
export async function driveTimed(
  call: () => Promise<string | undefined>,
  measureFrom: number,
  measureUntil: number,
  out: WorkerResult,
  fatal: (failure: string) => boolean = () => false,
): Promise<void> {
  for (;;) {
    const started = performance.now();
    if (started >= measureUntil) return;
    let failed: string | undefined;
    try {
      failed = await call();
    } catch (error) {
      failed = error instanceof Error ? error.message : String(error);
    }
    const ended = performance.now();
    if (ended < measureFrom) {
      out.warmupCalls++;
      continue;
    }
    if (ended > measureUntil) return;
    if (failed !== undefined) {
      out.errors++;
      out.firstError ??= failed;
      if (fatal(failed)) return;
    } else {
      out.latencies.push(Math.round((ended - started) * 1000) / 1000);
    }
  }
}
