import { AsyncLocalStorage } from "node:async_hooks";
import { isNatsBus, LazyKv, openKvBucket, type Bus, type Logger } from "@hatch/platform";
import type { EventStore, JSONRPCMessage } from "@modelcontextprotocol/server";
import { Kvm, KvWatchInclude, type KV, type KvEntry } from "@nats-io/kv";

// What lets a 2025-11-25 client resume an SSE stream after it dropped (`Last-Event-ID`), on whichever gateway copy its
// reconnect lands: every message a session's streams send is appended to a log all copies share (a JetStream
// key-value bucket on NATS; a map per in-process bus in `bun run dev`). An event id is `<stream>.<seq>`, where seq
// is the log's own sequence (increasing across copies), so a resume reads that stream's events after it, then follows
// the stream live while the copy that runs the call keeps sending (resume.ts). Retention is bounded: entries expire
// after EVENTS_TTL_MS, a stream keeps at most PER_STREAM events, and the bucket has a size cap. Tool results sit in it
// as they went over the wire to the same client; no token or secret is ever in an MCP message.

/** How long an event can be resumed from: a client away longer starts afresh. */
export const EVENTS_TTL_MS = 10 * 60_000;
/** Events kept per stream (one tool call sends a handful; a standalone stream's oldest go first in memory). */
const PER_STREAM = 500;
/** The shared bucket's size cap; past it, events are sent without an id (not resumable) until old ones expire. */
const BUCKET_MAX_BYTES = 256 * 1024 * 1024;
/** Sessions a dev (in-process) log keeps. */
const MEMORY_SESSIONS = 10_000;

/** One message a stream sent, as the log keeps it. */
export interface LoggedEvent {
  seq: number;
  message: JSONRPCMessage;
  /** The copy that sent it. */
  copy: string;
  /** On a stream's first event (its priming event): the ids of the client's requests the stream answers. */
  requests?: (string | number)[];
}

export interface McpEventLog {
  /** Appends a message sent on a session's stream; returns its sequence number. */
  append(session: string, stream: string, event: Omit<LoggedEvent, "seq">): Promise<number>;
  /** The stream's events after `after`, then each new one as it is appended, until `signal` aborts. */
  follow(session: string, stream: string, after: number, signal: AbortSignal): AsyncIterable<LoggedEvent>;
}

/** Waits between the tries of a stream's first event when the log does not answer (3.25 s in all). */
const PRIMING_RETRY_MS = [250, 500, 1_000, 1_500];

/** While a POST is handled: the ids of its requests, so the stream it opens records what it answers. */
export const postedRequests = new AsyncLocalStorage<(string | number)[]>();

/**
 * The SDK's event store for one 2025 session on this copy: every message its transport sends goes to the shared log.
 * Replay is never asked of it: endpoint.ts answers every `Last-Event-ID` itself (resume.ts), on any copy.
 */
export class SessionEventStore implements EventStore {
  private readonly counts = new Map<string, number>();
  constructor(
    private readonly log: McpEventLog,
    private readonly session: string,
    private readonly copy: string,
    private readonly logger: Logger,
  ) {}

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const count = (this.counts.get(streamId) ?? 0) + 1;
    if (count > PER_STREAM) return "";
    this.counts.set(streamId, count);
    if (this.counts.size > 1_000) this.counts.delete(this.counts.keys().next().value!);
    const priming = count === 1 && Object.keys(message).length === 0;
    const event = { message, copy: this.copy, ...(priming ? { requests: postedRequests.getStore() ?? [] } : {}) };
    // A stream's first event is what makes it resumable on any copy (its id, its requests, the copy running them):
    // while the log does not answer (JetStream electing a leader after a NATS node went away) it is tried again for a
    // few seconds. Without it a client whose stream drops reconnects without an id and waits for ever for its answer.
    for (const wait of [...(priming ? PRIMING_RETRY_MS : []), null]) {
      try {
        const seq = await this.log.append(this.session, streamId, event);
        return `${streamId}.${seq}`;
      } catch (error) {
        if (wait !== null) {
          await Bun.sleep(wait);
          continue;
        }
        // Not kept: the event goes out without an id, so the client cannot resume from it (nothing else is lost).
        this.logger.warn("MCP stream event not kept for resuming", { error });
      }
    }
    return "";
  }

  async replayEventsAfter(): Promise<string> {
    throw new Error("streams are resumed by the endpoint");
  }
}

/** `<stream>.<seq>` of an event id, or null when it is not one of ours. */
export function parseEventId(id: string): { stream: string; seq: number } | null {
  const match = /^([A-Za-z0-9_-]{1,64})\.(\d{1,15})$/.exec(id);
  return match ? { stream: match[1]!, seq: Number(match[2]) } : null;
}

class MemoryEventLog implements McpEventLog {
  private seq = 0;
  private readonly sessions = new Map<
    string,
    Map<string, { events: (LoggedEvent & { at: number })[]; wake: Set<() => void> }>
  >();

  private streamOf(session: string, stream: string) {
    let streams = this.sessions.get(session);
    if (!streams) {
      if (this.sessions.size >= MEMORY_SESSIONS) this.sessions.delete(this.sessions.keys().next().value!);
      this.sessions.set(session, (streams = new Map()));
    }
    let entry = streams.get(stream);
    if (!entry) streams.set(stream, (entry = { events: [], wake: new Set() }));
    return entry;
  }

  async append(session: string, stream: string, event: Omit<LoggedEvent, "seq">): Promise<number> {
    const entry = this.streamOf(session, stream);
    const now = Date.now();
    const seq = ++this.seq;
    entry.events.push({ ...event, seq, at: now });
    while (entry.events.length > PER_STREAM || (entry.events[0] && entry.events[0].at < now - EVENTS_TTL_MS))
      entry.events.shift();
    for (const wake of [...entry.wake]) wake();
    return seq;
  }

  async *follow(session: string, stream: string, after: number, signal: AbortSignal): AsyncIterable<LoggedEvent> {
    const entry = this.streamOf(session, stream);
    let last = after;
    while (!signal.aborted) {
      const next = entry.events.filter((e) => e.seq > last && e.at >= Date.now() - EVENTS_TTL_MS);
      for (const { at: _, ...event } of next) {
        last = event.seq;
        yield event;
        if (signal.aborted) return;
      }
      // Appended while the events above were read: read again before waiting.
      if (next.length) continue;
      await new Promise<void>((resolve) => {
        const done = () => {
          entry.wake.delete(done);
          signal.removeEventListener("abort", done);
          resolve();
        };
        entry.wake.add(done);
        signal.addEventListener("abort", done);
      });
    }
  }
}

class KvEventLog implements McpEventLog {
  private readonly bucket: LazyKv;
  private n = 0;
  constructor(
    open: () => Promise<KV>,
    private readonly logger: Logger,
  ) {
    this.bucket = new LazyKv(open);
  }

  private kv(): Promise<KV> {
    return this.bucket.get();
  }

  async append(session: string, stream: string, event: Omit<LoggedEvent, "seq">): Promise<number> {
    // The key only has to be unique; the entry's revision (the bucket's sequence) is the event's number.
    const key = `${session}.${stream}.${event.copy}${(++this.n).toString(36)}`;
    const body: Record<string, unknown> = { m: event.message, c: event.copy };
    if (event.requests) body.r = event.requests;
    return (await this.kv()).put(key, JSON.stringify(body));
  }

  async *follow(session: string, stream: string, after: number, signal: AbortSignal): AsyncIterable<LoggedEvent> {
    const kv = await this.kv();
    const watch = await kv.watch({
      key: `${session}.${stream}.*`,
      include: KvWatchInclude.AllHistory,
      ignoreDeletes: true,
      resumeFromRevision: after + 1,
    });
    const stop = () => watch.stop();
    signal.addEventListener("abort", stop);
    try {
      for await (const entry of watch as AsyncIterable<KvEntry>) {
        if (signal.aborted) return;
        if (entry.operation !== "PUT" || entry.revision <= after) continue;
        let body: { m?: JSONRPCMessage; c?: string; r?: (string | number)[] };
        try {
          body = entry.json();
        } catch {
          this.logger.warn("unreadable MCP stream event skipped");
          continue;
        }
        if (!body.m || typeof body.c !== "string") continue;
        yield { seq: entry.revision, message: body.m, copy: body.c, ...(body.r ? { requests: body.r } : {}) };
      }
    } finally {
      signal.removeEventListener("abort", stop);
      watch.stop();
    }
  }
}

/** The gateways of one in-process bus share one log (two copies in one test process resume each other's streams). */
const memoryLogs = new WeakMap<Bus, MemoryEventLog>();

export function eventBucketName(prefix: string): string {
  return ["hatch_mcp_events", prefix].filter(Boolean).join("_");
}

export function createEventLog(bus: Bus, logger: Logger): McpEventLog {
  if (!isNatsBus(bus)) {
    let log = memoryLogs.get(bus);
    if (!log) memoryLogs.set(bus, (log = new MemoryEventLog()));
    return log;
  }
  const name = eventBucketName(bus.prefix);
  return new KvEventLog(
    () => openKvBucket(bus, name, { history: 1, ttl: EVENTS_TTL_MS, max_bytes: BUCKET_MAX_BYTES }, logger),
    logger,
  );
}

/** Removes the bucket (a test run under its own bus prefix cleans up after itself). */
export async function deleteEventBucket(bus: Bus): Promise<void> {
  if (!isNatsBus(bus)) return;
  const kv = await new Kvm(bus.connection).open(eventBucketName(bus.prefix));
  await kv.destroy();
}
