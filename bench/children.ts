import type { Subprocess } from "bun";
import { join } from "node:path";
import postgres from "postgres";

export const ROOT = join(import.meta.dir, "..");

/** Lines a child prints to talk to the parent start with this; everything else is its own output. */
export const MARKER = "BENCH_";

const TAIL_LINES = 40;

/** Every child still running, so an interrupted run can stop them all. */
const live = new Set<Child>();

export async function stopAllChildren(): Promise<void> {
  await Promise.all([...live].map((child) => child.stop()));
}

/**
 * A child process whose stdout and stderr are always drained (a full pipe would stall a child that logs),
 * keeping the marker lines and a short tail of everything else for error messages.
 */
export class Child {
  readonly proc: Subprocess<"pipe", "pipe", "pipe">;
  private readonly markers: string[] = [];
  private readonly tail: string[] = [];
  private readonly listeners = new Set<() => void>();
  private stopping: Promise<void> | undefined;
  /** Set once the child exited and everything it wrote to stdout was read, so no marker line is missed. */
  private ended = false;

  constructor(
    readonly name: string,
    cmd: string[],
    env: Record<string, string | undefined>,
  ) {
    this.proc = Bun.spawn(cmd, { cwd: ROOT, env, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    const stdout = this.drain(this.proc.stdout, true);
    void this.drain(this.proc.stderr, false);
    live.add(this);
    void Promise.all([this.proc.exited, stdout.catch(() => {})]).then(() => {
      this.ended = true;
      live.delete(this);
      this.notify();
    });
  }

  /** Resolves with the text after `${MARKER}${tag} ` once the child prints it; rejects if it exits first. */
  async waitFor(tag: string, timeoutMs: number): Promise<string> {
    const prefix = `${MARKER}${tag} `;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = this.markers.find((m) => m.startsWith(prefix));
      if (line !== undefined) return line.slice(prefix.length);
      if (this.ended) {
        throw new Error(
          `${this.name} exited (${this.proc.exitCode ?? this.proc.signalCode}) before ${tag}:\n${this.output()}`,
        );
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${this.name}: no ${tag} within ${timeoutMs} ms:\n${this.output()}`);
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.listeners.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, left);
        this.listeners.add(wake);
      });
    }
  }

  send(line: string): void {
    this.proc.stdin.write(`${line}\n`);
    void this.proc.stdin.flush();
  }

  /** The last lines the child wrote, for error messages. */
  output(): string {
    return this.tail.join("\n");
  }

  /** SIGTERM, then SIGKILL after a grace period. Every call waits for the same exit. */
  stop(graceMs = 5_000): Promise<void> {
    this.stopping ??= (async () => {
      if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill("SIGTERM");
      const timer = setTimeout(() => this.proc.kill("SIGKILL"), graceMs);
      await this.proc.exited;
      clearTimeout(timer);
    })();
    return this.stopping;
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }

  private async drain(stream: ReadableStream<Uint8Array>, markers: boolean): Promise<void> {
    const decoder = new TextDecoder();
    let pending = "";
    for await (const chunk of stream) {
      pending += decoder.decode(chunk, { stream: true });
      let newline: number;
      while ((newline = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (markers && line.startsWith(MARKER)) {
          this.markers.push(line);
          this.notify();
        } else if (line.trim()) {
          this.tail.push(`[${this.name}] ${line.length > 500 ? `${line.slice(0, 500)}…` : line}`);
          if (this.tail.length > TAIL_LINES) this.tail.shift();
        }
      }
    }
  }
}

/** Runs a command to completion and returns its output (for `bun run admin`). */
export async function runCommand(
  cmd: string[],
  env: Record<string, string | undefined>,
  timeoutMs = 30_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(cmd, { cwd: ROOT, env, stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
  try {
    const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
    return { code: await proc.exited, stdout, stderr };
  } finally {
    clearTimeout(timer);
  }
}

/** A TCP port that was free a moment ago (the gateway's base URL, hence its token audience, needs it first). */
export function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port!;
  void probe.stop(true);
  return port;
}

export interface BenchDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** A fresh database on the server of `serverUrl`; `drop()` removes it even with connections still open. */
export async function createDatabase(serverUrl: string, name: string): Promise<BenchDatabase> {
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    name,
    url: url.toString(),
    async drop() {
      if (dropped) return;
      dropped = true;
      const again = postgres(serverUrl, { max: 1, onnotice: () => {} });
      try {
        await again.unsafe(`drop database if exists "${name}" with (force)`);
      } finally {
        await again.end();
      }
    },
  };
}
