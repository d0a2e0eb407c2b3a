import { readFileSync, readlinkSync } from "node:fs";

// The clock of the CPU budget: the CPU time of the calling thread (a sandbox worker's own thread), in milliseconds.
// Not wall time: on a busy machine a thread waits for a core, and a brand-new worker may still run WebAssembly in a
// slower tier; neither is the app's doing. Resolution is a few milliseconds (the kernel's accounting), far below the
// 200 ms budget. Where the runtime has no per-thread figure, wall time stands in.

type ThreadCpuUsage = () => { user: number; system: number };

const threadCpuUsage = (process as unknown as { threadCpuUsage?: ThreadCpuUsage }).threadCpuUsage;

export const threadCpuMs: () => number =
  typeof threadCpuUsage === "function"
    ? () => {
        const used = threadCpuUsage.call(process);
        return (used.user + used.system) / 1000;
      }
    : () => performance.now();

/**
 * CPU time of every thread of the process but the calling one, in milliseconds (null where the runtime has no
 * per-thread figure). The app host's watchdog reads it: a worker cannot have spent more CPU time than this grew by.
 */
export function otherThreadsCpuMs(): number | null {
  if (typeof threadCpuUsage !== "function") return null;
  const all = process.cpuUsage();
  return (all.user + all.system) / 1000 - threadCpuMs();
}

/**
 * The calling thread's id on Linux (`/proc/thread-self`), or 0 elsewhere. A sandbox worker puts it on its board so
 * the watchdog can read that thread's own CPU time.
 */
export function currentThreadId(): number {
  try {
    return Number(readlinkSync("/proc/thread-self").split("/").pop()) || 0;
  } catch {
    return 0;
  }
}

/**
 * CPU time of one thread of this process, in milliseconds (the kernel's accounting: 10 ms steps), or null when it
 * cannot be read (not Linux, or the thread is gone). The watchdog judges a stuck worker by its own thread's CPU time:
 * a worker starved of a core on a busy machine has not used its limit, however long it waited.
 */
export function threadCpuMsOf(threadId: number): number | null {
  if (threadId <= 0) return null;
  try {
    const stat = readFileSync(`/proc/self/task/${threadId}/stat`, "latin1");
    // The fields after the command name (which may hold spaces) start with the state; utime and stime are 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks * (1000 / CLOCK_TICKS_PER_SECOND) : null;
  } catch {
    return null;
  }
}

/** USER_HZ: the unit of /proc's CPU times, 100 on every Linux architecture Bun runs on. */
const CLOCK_TICKS_PER_SECOND = 100;
