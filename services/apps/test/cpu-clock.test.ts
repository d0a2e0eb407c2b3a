import { describe, expect, test } from "bun:test";
import { currentThreadId, threadCpuMsOf } from "../src/server-code/cpu-clock.ts";

// The watchdog's clock for one worker: that thread's own CPU time, read from another thread.
describe.skipIf(process.platform !== "linux")("a thread's CPU time, read by another thread", () => {
  test("grows while the thread computes and stands still while it waits", async () => {
    const source = `
      const { readlinkSync } = require("node:fs");
      self.onmessage = (event) => {
        if (event.data === "tid") return postMessage(Number(readlinkSync("/proc/thread-self").split("/").pop()));
        // Computes until its own clock says it used that many milliseconds, however busy the machine is.
        const own = () => { const u = process.threadCpuUsage(); return (u.user + u.system) / 1000; };
        const until = own() + event.data;
        let x = 0;
        while (own() < until) for (let i = 0; i < 10000; i++) x = (x * 31 + i) % 1000003;
        postMessage(x);
      };`;
    const url = URL.createObjectURL(new Blob([source], { type: "application/javascript" }));
    const worker = new Worker(url);
    const ask = (message: unknown) =>
      new Promise<number>((resolve) => {
        worker.onmessage = (event: MessageEvent) => resolve(event.data as number);
        worker.postMessage(message);
      });
    try {
      const tid = await ask("tid");
      expect(tid).toBeGreaterThan(0);
      expect(tid).not.toBe(currentThreadId());
      const before = threadCpuMsOf(tid)!;
      await ask(100);
      const afterWork = threadCpuMsOf(tid)!;
      // At least 50 of the loop's 100 ms landed on the worker's own clock (the kernel counts in 10 ms steps).
      expect(afterWork - before).toBeGreaterThanOrEqual(50);
      await Bun.sleep(300);
      expect(threadCpuMsOf(tid)! - afterWork).toBeLessThanOrEqual(20);
    } finally {
      worker.terminate();
      URL.revokeObjectURL(url);
    }
  });

  test("a thread that is not there has no figure", () => {
    expect(threadCpuMsOf(0)).toBeNull();
    expect(threadCpuMsOf(2 ** 31 - 2)).toBeNull();
  });
});
