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
