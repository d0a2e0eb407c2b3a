import { readdirSync, readFileSync } from "node:fs";

/** A child's output, read as it comes, so a test can wait for a line and still see what follows. */
export interface Output {
  readonly text: string;
  /** Resolves when `marker` has appeared; rejects (with what was seen) if the stream ends first. */
  waitFor(marker: string): Promise<void>;
  /** Resolves when the stream has ended. */
  readonly ended: Promise<void>;
}

export function collect(stream: ReadableStream<Uint8Array>): Output {
  let text = "";
  let done = false;
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const waiter of [...waiters]) waiter();
  };
  const ended = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      text += decoder.decode(chunk, { stream: true });
      wake();
    }
    done = true;
    wake();
  })();
  return {
    get text() {
      return text;
    },
    ended,
    async waitFor(marker) {
      while (!text.includes(marker)) {
        if (done) throw new Error(`the output ended before "${marker}" appeared:\n${text}`);
        await new Promise<void>((resolve) => {
          const waiter = () => {
            waiters.delete(waiter);
            resolve();
          };
          waiters.add(waiter);
        });
      }
    },
  };
}

/** Whether a pid is a live process (a zombie waiting to be reaped counts as gone). */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** The pids whose parent is `pid` (read from /proc). */
export function childPids(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[1]) === pid) children.push(Number(entry));
    } catch {
      // Gone while we looked.
    }
  }
  return children;
}

/** Waits until none of these pids is alive (the test's own timeout bounds the wait). */
export async function allGone(pids: number[]): Promise<void> {
  while (pids.some(isAlive)) await Bun.sleep(100);
}

/** The JSON log lines of an output that have this message. */
export function logLines(output: Output, msg: string): Array<Record<string, unknown>> {
  return output.text
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.msg === msg);
}
