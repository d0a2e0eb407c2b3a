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
