import { subjects } from "@hatch/contracts";
import { DATA_LIMITS } from "../spec/data-rules.ts";
import { decodeJson, encodeJson, type Bus, type BusSubscription, type Logger } from "@hatch/platform";
import { DataError } from "../http/answers.ts";

// Live changes of collections (`GET /_hatch/db/<c>/_changes`, server-sent events). A change is published on the bus
// after its transaction commits; every app host hears it once (one subscription per instance) and passes it to its
// open streams of that app and collection. Best effort: a page that missed a change sees it on its next list.

export type ChangeType = "added" | "updated" | "removed";

/** What travels on `subjects.appsDataChanged`. */
export interface DataChange {
  appId: string;
  collection: string;
  type: ChangeType;
  id: string;
  /** The creator's user id: a stream under the `creator` read rule passes only its viewer's. Never sent to pages. */
  creator: string | null;
  /** The document as pages see it; none for `removed`. */
  document?: Record<string, unknown>;
}

export interface LiveStreamOptions {
  appId: string;
  collection: string;
  /** Whose streams count together against subscriptionsPerViewer (the caller's rate key: app and viewer). */
  holder: string;
  /** Under the `creator` read rule the viewer's user id (only their own documents' changes); else null. */
  onlyCreator: string | null;
  /** The request's signal: aborted when the page goes away. */
  signal: AbortSignal;
  /**
   * Asked at every ping: may this viewer still read here, and under which rule? (The viewer may have signed out, the
   * app been paused, a new version changed the rules.) null, or a rejection, ends the stream.
   */
  recheck(): Promise<{ onlyCreator: string | null } | null>;
}

export interface LiveChangesOptions {
  /** How often a `: ping` comment keeps idle connections open and the viewer is checked again (default 25 s). */
  pingMs?: number;
}

interface Stream {
  holder: string;
  onlyCreator: string | null;
  controller: ReadableStreamDefaultController<Uint8Array>;
  recheck: LiveStreamOptions["recheck"];
  checking: boolean;
  close(): void;
}

const encoder = new TextEncoder();
const READY = encoder.encode("retry: 3000\n: ready\n\n");
const PING = encoder.encode(": ping\n\n");
/** Bytes a stream may fall behind (a page that stopped reading) before it is closed; the browser reconnects. */
const MAX_BACKLOG = 1024 * 1024;
const STREAM_HEADERS = {
  "Content-Type": "text/event-stream; charset=utf-8",
  "Cache-Control": "no-store",
  "X-Accel-Buffering": "no",
  "X-Content-Type-Options": "nosniff",
};

export class LiveChanges {
  /** `<app id>\n<collection>` → its open streams. */
  private readonly streams = new Map<string, Set<Stream>>();
  private readonly held = new Map<string, number>();
  private open = 0;
  private timer: ReturnType<typeof setInterval> | null = null;
  private readonly pingMs: number;

  constructor(
    private readonly bus: Bus,
    private readonly logger: Logger,
    options: LiveChangesOptions = {},
  ) {
    this.pingMs = options.pingMs ?? 25_000;
  }

  /** Hears every instance's changes; unsubscribing also ends this instance's open streams. */
  listen(): BusSubscription {
    const subscription = this.bus.subscribe(subjects.appsDataChanged, (msg) => {
      let change: DataChange;
      try {
        change = decodeJson(msg.data) as DataChange;
      } catch {
        return;
      }
      if (typeof change?.appId === "string" && typeof change.collection === "string") this.deliver(change);
    });
    const closeStreams = () => {
      for (const set of [...this.streams.values()]) for (const stream of [...set]) stream.close();
    };
    return {
      subject: subscription.subject,
      unsubscribe: () => {
        subscription.unsubscribe();
        closeStreams();
      },
      drain: async () => {
        await subscription.drain();
        closeStreams();
      },
    };
  }

  /** Tells every instance about a committed change. Never throws: a lost live update only delays a page. */
  publish(change: DataChange): void {
    try {
      this.bus.publish(subjects.appsDataChanged, encodeJson(change));
    } catch (error) {
      this.logger.warn("data change not published", { error });
    }
  }

  /** Opens an event stream, or refuses with limit_exceeded when the viewer holds the most streams already. */
  stream(options: LiveStreamOptions): Response {
    const holding = this.held.get(options.holder) ?? 0;
    if (holding >= DATA_LIMITS.subscriptionsPerViewer) {
      throw new DataError(
        "limit_exceeded",
        `You have ${holding} live subscriptions to this app open, the most allowed. Call the unsubscribe function of ones you no longer need, or close other tabs.`,
        { "Retry-After": "5" },
      );
    }
    const key = `${options.appId}\n${options.collection}`;
    let stream!: Stream;
    const body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          stream = this.add(key, options, controller);
          controller.enqueue(READY);
        },
        cancel: () => stream.close(),
      },
      { highWaterMark: 64 * 1024, size: (chunk) => chunk?.byteLength ?? 0 },
    );
    if (options.signal.aborted) stream.close();
    else options.signal.addEventListener("abort", () => stream.close(), { once: true });
    return new Response(body, { headers: STREAM_HEADERS });
  }

  private add(
    key: string,
    options: LiveStreamOptions,
    controller: ReadableStreamDefaultController<Uint8Array>,
  ): Stream {
    let set = this.streams.get(key);
    if (!set) this.streams.set(key, (set = new Set()));
    const streams = set;
    let closed = false;
    const stream: Stream = {
      holder: options.holder,
      onlyCreator: options.onlyCreator,
      controller,
      recheck: options.recheck,
      checking: false,
      close: () => {
        if (closed) return;
        closed = true;
        streams.delete(stream);
        if (!streams.size) this.streams.delete(key);
        const left = (this.held.get(stream.holder) ?? 1) - 1;
        if (left > 0) this.held.set(stream.holder, left);
        else this.held.delete(stream.holder);
        if (--this.open === 0 && this.timer) {
          clearInterval(this.timer);
          this.timer = null;
        }
        try {
          controller.close();
        } catch {
          // Already closed or cancelled by the page.
        }
      },
    };
    streams.add(stream);
    this.held.set(stream.holder, (this.held.get(stream.holder) ?? 0) + 1);
    if (this.open++ === 0) this.timer = setInterval(() => this.ping(), this.pingMs);
    return stream;
  }

  private deliver(change: DataChange): void {
    const streams = this.streams.get(`${change.appId}\n${change.collection}`);
    if (!streams) return;
    const event = { type: change.type, id: change.id, ...(change.document ? { document: change.document } : {}) };
    const frame = encoder.encode(`event: change\ndata: ${JSON.stringify(event)}\n\n`);
    for (const stream of [...streams]) {
      if (stream.onlyCreator === null || stream.onlyCreator === change.creator) this.send(stream, frame);
    }
  }

  private send(stream: Stream, chunk: Uint8Array): void {
    const backlog = -(stream.controller.desiredSize ?? 0);
    if (backlog > MAX_BACKLOG) return stream.close();
    try {
      stream.controller.enqueue(chunk);
    } catch {
      stream.close();
    }
  }

  private ping(): void {
    for (const set of [...this.streams.values()]) {
      for (const stream of [...set]) {
        this.send(stream, PING);
        if (stream.checking) continue;
        stream.checking = true;
        stream.recheck().then(
          (allowed) => {
            stream.checking = false;
            if (allowed) stream.onlyCreator = allowed.onlyCreator;
            else stream.close();
          },
          () => stream.close(),
        );
      }
    }
  }
}
