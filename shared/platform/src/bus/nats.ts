import {
  connect,
  errors,
  headers as natsHeaders,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
} from "@nats-io/transport-node";
import { formatBytes, ToolError } from "@hatch/contracts";
import type { Logger } from "../logger.ts";
import { withDeadlineOr } from "../deadline.ts";
import {
  BusError,
  DRAIN_WAIT_MS,
  settleWithin,
  toBytes,
  withoutPrefix,
  withPrefix,
  type Bus,
  type BusHandler,
  type BusSubscription,
  type PublishOptions,
  type RequestOptions,
  type SubscribeOptions,
} from "./types.ts";

// nats.js is patched (patches/@nats-io%2Fnats-core@3.4.0.patch) to write what it queued once per event loop turn
// rather than at every microtask checkpoint: the requests and replies of the calls one turn handles share a socket
// write (bench/README.md, round 3). Also (round 5): an answered request builds no error, and header keys are looked
// up, not filtered out of an array of all of them.

export interface NatsBusOptions {
  /** One server URL or several, comma-separated (a cluster's nodes): any that answers will do. */
  url: string;
  /** Every subject is sent as `<prefix>.<subject>`, so deployments and test runs never cross. */
  prefix?: string;
  name?: string;
  logger?: Logger;
  /** A lower message size limit than the server's `max_payload` (tests); the smaller of the two applies. */
  maxPayloadBytes?: number;
  /** NATS user and password (NATS_USER, NATS_PASSWORD): the server's permissions for this process apply. */
  user?: string;
  pass?: string;
  /** Copies JetStream keeps of the streams and key-value buckets made on this bus (NATS_REPLICAS; default 1). */
  replicas?: number;
  /**
   * When no server answers at start: wait and try again, with a log line each time, instead of failing (what the
   * mains do, so a process started before NATS waits for it). Tests leave it off and get the error.
   */
  waitForServer?: boolean;
}

/** The NATS bus also exposes its connection and prefix, for JetStream (the events stream) on the same connection. */
export type NatsBus = Bus & {
  readonly kind: "nats";
  readonly connection: NatsConnection;
  readonly prefix: string;
  /** Copies of each stream and key-value bucket this process makes or brings up to date (NATS_REPLICAS). */
  readonly replicas: number;
};

export function isNatsBus(bus: Bus): bus is NatsBus {
  return bus.kind === "nats" && "connection" in bus;
}

/** The servers of a NATS_URL: one URL or a comma-separated list. */
export function natsServers(url: string): string[] {
  return url
    .split(",")
    .map((one) => one.trim())
    .filter(Boolean);
}

/** The servers as a log line may show them: without user or password. */
function shownServers(servers: string[]): string {
  return servers
    .map((server) => {
      if (!URL.canParse(server)) return "(unreadable URL)";
      const u = new URL(server);
      u.username = "";
      u.password = "";
      return u.toString().replace(/\/$/, "");
    })
    .join(",");
}

/** Longest pause between two tries while waiting for NATS at start. */
const WAIT_MAX_MS = 5_000;

export async function createNatsBus(options: NatsBusOptions): Promise<NatsBus> {
  const servers = natsServers(options.url);
  let pause = 250;
  for (let attempt = 1; ; attempt++) {
    try {
      const nc = await connect({
        servers,
        name: options.name,
        ...(options.user ? { user: options.user, pass: options.pass } : {}),
        maxReconnectAttempts: -1,
        reconnectTimeWait: 500,
        // Otherwise nats.js builds an Error per request just to keep a stack for a possible timeout.
        noAsyncTraces: true,
      });
      if (attempt > 1) options.logger?.info("connected to NATS", { servers: shownServers(servers), attempt });
      return wrapNatsConnection(nc, options);
    } catch (error) {
      // Wrong user or password does not get better by waiting: that is the caller's error.
      if (!options.waitForServer || error instanceof errors.AuthorizationError) throw error;
      options.logger?.warn("waiting for NATS: no server answers yet; trying again", {
        servers: shownServers(servers),
        reason: error instanceof Error ? error.message : String(error),
        attempt,
        retryInMs: pause,
      });
      await Bun.sleep(pause);
      pause = Math.min(WAIT_MAX_MS, pause * 2);
    }
  }
}

/**
 * Whether this bus can reach its server now (a round trip within `timeoutMs`): false while NATS is away, while the
 * client reconnects, or once the bus drains. The in-process bus is always there.
 */
export async function busReachable(bus: Bus, timeoutMs = 1_000): Promise<boolean> {
  if (!isNatsBus(bus)) return true;
  const nc = bus.connection;
  if (nc.isClosed() || nc.isDraining()) return false;
  const flushed = nc.flush().then(
    () => true,
    () => false,
  );
  return withDeadlineOr(flushed, timeoutMs, false);
}

export function wrapNatsConnection(nc: NatsConnection, options: Omit<NatsBusOptions, "url">): NatsBus {
  const prefix = options.prefix ?? "";
  const replicas = options.replicas ?? 1;
  const inFlight = new Set<Promise<void>>();

  // Headers are on the path of every call (a request's traceparent and request id): each key lower-cased once and
  // appended (no lookup of a key that cannot be there yet), and read back from the iterator (one pass, first value).
  const toHeaders = (record: Record<string, string> | undefined): MsgHdrs | undefined => {
    if (!record) return undefined;
    let h: MsgHdrs | undefined;
    for (const key in record) {
      h ??= natsHeaders();
      const name = key.toLowerCase();
      if (h.has(name)) h.set(name, record[key]!);
      else h.append(name, record[key]!);
    }
    return h;
  };
  const fromHeaders = (h: MsgHdrs | undefined): Record<string, string> => {
    const out: Record<string, string> = {};
    if (!h) return out;
    for (const [key, values] of h) if (values[0] !== undefined) out[key.toLowerCase()] = values[0];
    return out;
  };
  /**
   * The server drops a connection that sends more than its max_payload, and nats.js throws a bare error before
   * that. Refuse here with a message the AI can act on (the only large calls are inline publishes).
   */
  const checkSize = (data: Uint8Array, headers: Record<string, string> | undefined) => {
    const limit = Math.min(
      nc.info?.max_payload ?? Number.POSITIVE_INFINITY,
      options.maxPayloadBytes ?? Number.POSITIVE_INFINITY,
    );
    const size = data.byteLength + headerBytes(headers);
    if (size <= limit) return;
    throw new ToolError(
      "limit_exceeded",
      `This call is ${formatBytes(size)}, over the bus limit of ${formatBytes(limit)}. Publish larger folders with upload: true ` +
        "(no files): it answers with one shell command that uploads the built folder.",
    );
  };

  const handle = async (handler: BusHandler, msg: Msg): Promise<void> => {
    try {
      const reply = await handler({
        subject: withoutPrefix(prefix, msg.subject),
        data: msg.data,
        headers: fromHeaders(msg.headers),
      });
      if (reply && msg.reply) msg.respond(toBytes(reply.data), { headers: toHeaders(reply.headers) });
    } catch (error) {
      options.logger?.error("bus handler failed", { subject: msg.subject, error });
    }
  };

  return {
    kind: "nats",
    connection: nc,
    prefix,
    replicas,
    async request(subject: string, data: Uint8Array | string, opts: RequestOptions) {
      const full = withPrefix(prefix, subject);
      const bytes = toBytes(data);
      checkSize(bytes, opts.headers);
      try {
        const msg = await nc.request(full, bytes, {
          timeout: opts.timeoutMs,
          headers: toHeaders(opts.headers),
        });
        return { subject, data: msg.data, headers: fromHeaders(msg.headers) };
      } catch (error) {
        throw mapError(error, subject);
      }
    },
    subscribe(subject: string, handler: BusHandler, opts: SubscribeOptions = {}): BusSubscription {
      const full = withPrefix(prefix, subject);
      const mine = new Set<Promise<void>>();
      const sub = nc.subscribe(full, {
        queue: opts.queue,
        callback: (err, msg) => {
          if (err) {
            options.logger?.error("bus subscription error", { subject: full, error: err });
            return;
          }
          const running = handle(handler, msg);
          inFlight.add(running);
          mine.add(running);
          void running.finally(() => {
            inFlight.delete(running);
            mine.delete(running);
          });
        },
      });
      return {
        subject,
        unsubscribe: () => sub.unsubscribe(),
        async drain() {
          // nats.js's drain: UNSUB, then a round trip, so every message the server routed here before it stopped
          // routing arrives and is handed to the callback. Then its handlers finish (the caller bounds the wait).
          if (!sub.isClosed() && !nc.isClosed()) await sub.drain().catch(() => undefined);
          await Promise.allSettled([...mine]);
        },
      };
    },
    publish(subject: string, data: Uint8Array | string, opts: PublishOptions = {}) {
      const bytes = toBytes(data);
      checkSize(bytes, opts.headers);
      try {
        nc.publish(withPrefix(prefix, subject), bytes, { headers: toHeaders(opts.headers) });
      } catch (error) {
        throw mapError(error, subject);
      }
    },
    async flush() {
      await nc.flush();
    },
    async drain() {
      if (nc.isClosed()) return;
      await nc.drain();
      await settleWithin(inFlight, DRAIN_WAIT_MS);
    },
  };
}

/** Size of headers as NATS encodes them: `NATS/1.0\r\n`, `key: value\r\n` each, then `\r\n`. */
function headerBytes(record: Record<string, string> | undefined): number {
  let sum = 0;
  for (const key in record) sum += Buffer.byteLength(key) + Buffer.byteLength(record[key]!) + ": \r\n".length;
  return sum === 0 ? 0 : sum + "NATS/1.0\r\n\r\n".length;
}

function mapError(error: unknown, subject: string): Error {
  if (error instanceof errors.RequestError && error.isNoResponders()) return new BusError("no_responders", subject);
  if (error instanceof errors.NoRespondersError) return new BusError("no_responders", subject);
  if (error instanceof errors.TimeoutError) return new BusError("timeout", subject);
  if (error instanceof errors.RequestError && error.cause instanceof errors.TimeoutError)
    return new BusError("timeout", subject);
  if (error instanceof errors.ClosedConnectionError || error instanceof errors.DrainingConnectionError) {
    return new BusError("closed", subject);
  }
  return error instanceof Error ? error : new Error(String(error));
}
