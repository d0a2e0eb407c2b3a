// A sandbox worker that cannot load, as when QuickJS itself is missing: it notes each start in a file named by the
// process's id (a worker sees neither the environment set after the process started nor its URL's query), then fails
// before it is ready.
import { appendFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const startsFile = (pid: number) => join(tmpdir(), `hatch-failing-worker-${pid}`);

if (!Bun.isMainThread) {
  appendFileSync(startsFile(process.pid), "start\n");
  throw new Error("the sandbox engine could not be loaded");
}
