import type { Subprocess } from "bun";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { collect, type Output } from "./processes.ts";

export interface RunningCaddy {
  process: Subprocess<"ignore", "pipe", "pipe">;
  /** What Caddy logs (its stderr), for a failure message. */
  output: Output;
}

/**
 * Caddy on `caddyfile`, written to `dir/Caddyfile`. `dir` is also its home (data, config), so nothing of the machine's
 * is read or written. The caller waits for it to listen, then kills it and awaits `process.exited`.
 */
export function startCaddy(dir: string, caddyfile: string): RunningCaddy {
  writeFileSync(join(dir, "Caddyfile"), caddyfile);
  const child = Bun.spawn(["caddy", "run", "--config", join(dir, "Caddyfile"), "--adapter", "caddyfile"], {
    env: {
      ...process.env,
      HOME: dir,
      XDG_DATA_HOME: join(dir, "xdg-data"),
      XDG_CONFIG_HOME: join(dir, "xdg-config"),
    },
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  collect(child.stdout);
  return { process: child, output: collect(child.stderr) };
}
