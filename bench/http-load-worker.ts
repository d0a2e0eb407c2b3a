// One HTTP load-generating process: `bun bench/http-load-worker.ts '<HttpWorkerConfig JSON>'`. Runs `clients`
// loops, each on its own keep-alive connection, of GET <url> (or the configured method and JSON body), reading
// the whole answer; prints
// `BENCH_CONNECTED {}` once every connection answered, waits for `GO <epoch ms>` on stdin, then prints
// `BENCH_RESULT {…}` (the same WorkerResult as the MCP load worker, so load.ts merges both alike).
import { connect, type Socket } from "node:net";
import { MARKER } from "./children.ts";
import type { WorkerResult } from "./load-worker.ts";
import { driveTimed, readGo } from "./worker-loop.ts";

export interface HttpWorkerConfig {
  /** Where to connect (http://127.0.0.1:<port>/path). */
  url: string;
  /** The Host header to send (the app host routes by it). */
  host: string;
  clients: number;
  warmupMs: number;
  durationMs: number;
  /** Default GET; with `json`, the body sent as application/json. */
  method?: string;
  json?: string;
}

const config = JSON.parse(process.argv[2] ?? "{}") as HttpWorkerConfig;
const result: WorkerResult = { latencies: [], errors: 0, warmupCalls: 0, answers: { json: 0, sse: 0 } };
const target = new URL(config.url);
const body =
  config.json === undefined
    ? ""
    : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(config.json)}\r\n\r\n${config.json}`;
const REQUEST = Buffer.from(
  `${config.method ?? "GET"} ${target.pathname}${target.search} HTTP/1.1\r\nHost: ${config.host}\r\nUser-Agent: hatch-bench\r\nAccept: ${config.json === undefined ? "text/html" : "application/json"}\r\n${body || "\r\n"}`,
);

/**
 * A minimal HTTP/1.1 client on one keep-alive socket: one request at a time, the answer read to the end of its
 * Content-Length. fetch() would cost the load generator several times the CPU per request of the servers being
 * measured, on a machine where both share two CPUs.
 */
class Connection {
  private buffer: Buffer = Buffer.alloc(0);
  private waiting: ((error?: Error) => void) | null = null;
  private status = 0;

  constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => {
      this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
      this.tryComplete();
    });
    socket.on("error", (error) => this.finish(error));
    socket.on("close", () => this.finish(new Error("connection closed")));
  }

  static open(): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const socket = connect(Number(target.port), target.hostname, () => resolve(new Connection(socket)));
      socket.once("error", reject);
    });
  }

  /** Sends one request; resolves with the status once the whole answer arrived. */
  get(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.waiting = (error) => (error ? reject(error) : resolve(this.status));
      this.socket.write(REQUEST);
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private tryComplete(): void {
    const end = this.buffer.indexOf("\r\n\r\n");
    if (end < 0) return;
    const head = this.buffer.subarray(0, end).toString("latin1");
    const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? "NaN");
    if (!Number.isFinite(length)) return this.finish(new Error(`no Content-Length in: ${head.slice(0, 200)}`));
    if (this.buffer.length < end + 4 + length) return;
    this.status = Number(head.slice(9, 12));
    this.buffer = this.buffer.subarray(end + 4 + length);
    this.finish();
  }

  private finish(error?: Error): void {
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.(error);
  }
}

function drive(connection: Connection, measureFrom: number, measureUntil: number): Promise<void> {
  const get = async () => {
    const status = await connection.get();
    return status >= 200 && status < 300 ? undefined : `HTTP ${status}`;
  };
  // A closed connection cannot make another request: that client stops.
  return driveTimed(get, measureFrom, measureUntil, result, (failure) => failure === "connection closed");
}

const connections = await Promise.all(Array.from({ length: config.clients }, () => Connection.open()));
// Every connection answers once before the start, so the run measures serving, not connecting.
await Promise.all(connections.map((c) => c.get()));
process.stdout.write(`${MARKER}CONNECTED {}\n`);
const startAt = await readGo();
const begin = performance.now() + (startAt - Date.now());
const measureFrom = begin + config.warmupMs;
const measureUntil = measureFrom + config.durationMs;
await Bun.sleep(Math.max(0, begin - performance.now()));
await Promise.all(connections.map((c) => drive(c, measureFrom, measureUntil)));
for (const c of connections) c.close();
// Handed to the OS before exiting: process.exit does not wait for a pipe write still queued.
await new Promise<void>((resolve) =>
  process.stdout.write(`${MARKER}RESULT ${JSON.stringify(result)}\n`, () => resolve()),
);
process.exit(0);
