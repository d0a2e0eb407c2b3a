import type { QuickJSContext, QuickJSRuntime, QuickJSWASMModule } from "quickjs-emscripten";
import { wasmHeapBytes } from "./marshal.ts";

/** CPU time between two measures of a runtime's memory (a measure walks its heap: about 60 µs for a small app). */
const MEASURE_EVERY_MS = 10;

/**
 * The memory limit of one runtime. QuickJS's own limit cannot be trusted in this build (see wasmHeapBytes), so the
 * runtime's heap is measured, by walking it, whenever the shared WebAssembly heap grew or after MEASURE_EVERY_MS of
 * CPU time since the last measure: a runtime cannot allocate much without one or the other. The interrupt handler
 * asks while code runs, and each entry asks on its way out (a native call may have allocated without a check).
 */
export class MemoryGuard {
  private heapMark = 0;
  private cpuSinceMeasure = 0;
  private entryStart = 0;

  constructor(
    private readonly module: QuickJSWASMModule,
    private readonly runtime: QuickJSRuntime,
    private readonly context: QuickJSContext,
    private readonly limitBytes: number,
  ) {}

  entered(now: number): void {
    this.entryStart = now;
  }

  /** Whether the runtime is over its limit; measures only when a measure is due. */
  over(now: number): boolean {
    const due =
      wasmHeapBytes(this.module) > this.heapMark || this.cpuSinceMeasure + (now - this.entryStart) > MEASURE_EVERY_MS;
    return due && this.measure(now);
  }

  left(now: number): void {
    this.cpuSinceMeasure += now - this.entryStart;
  }

  private measure(now: number): boolean {
    this.heapMark = wasmHeapBytes(this.module);
    this.cpuSinceMeasure = -(now - this.entryStart);
    let used = Number.POSITIVE_INFINITY;
    try {
      const usage = this.runtime.computeMemoryUsage();
      try {
        used = this.context.getProp(usage, "memory_used_size").consume((h) => this.context.getNumber(h));
      } finally {
        usage.dispose();
      }
    } catch {
      // Measuring needs a little memory of its own: failing to is as good as an answer.
    }
    return used > this.limitBytes;
  }
}
