import type { Logger } from "@hatch/platform";
import type { JSONRPCMessage } from "@modelcontextprotocol/server";
import { parseEventId, type McpEventLog } from "./event-store.ts";

// A 2025 client whose SSE stream dropped reconnects with `GET /mcp` and `Last-Event-ID`; the round robin may send it to
// any copy. That copy answers from the shared log: the events it missed, then, while the call is still running on the
// copy that holds it, each new event as that copy sends it (a form question, the result). The stream ends after the
// call's result. Should the copy that runs the call stop before answering (a crash, a kill), the client gets one
// clear JSON-RPC error for its request instead of waiting for ever: whether the call finished is unknown, so it says
// to check and call again.

/** The SDK's id of a session's standalone GET stream: it answers no request, so following it never ends by itself. */
const STANDALONE = "_GET_stream";
/** How often a follower sends a keep-alive, and how long a call's stream may show no event at all before it ends. */
export const LIVENESS_MS = 3_000;
/**
 * How often a follower asks whether the copy running the call is still there, from the start: a client that resumes
 * usually does so because that copy stopped, and it must hear so well within its own request timeout.
 */
export const COPY_CHECK_MS = 500;
/** The copy is taken for gone when every check has said so for this long (a copy reconnecting to NATS, 0.5 s apart
 * per try, is briefly without its subscriptions too). */
export const COPY_GONE_AFTER_MS = 2_000;
/** After the shared log failed to answer, how long a follower waits before it reads it again. */
const FOLLOW_RETRY_MS = 500;

export interface ResumeOptions {
  log: McpEventLog;
  session: string;
  lastEventId: string;
  /** Whether the copy that sent the stream's events still runs: false only when it is known to be gone. */
  copyAlive(copy: string): Promise<boolean>;
  /** Ends the follow when this copy shuts down (the client reconnects elsewhere). */
  closing: AbortSignal;
  logger?: Logger;
}

export const COPY_GONE_MESSAGE =
  "The Hatch server that was running this call stopped before it answered, so whether it finished is unknown. " +
  "Check (e.g. with a listing or status tool), then call again if it is needed.";

export function resumeStream(options: ResumeOptions): Response {
  const parsed = parseEventId(options.lastEventId);
  if (!parsed) {
    return Response.json(
      { jsonrpc: "2.0", error: { code: -32000, message: "Invalid Last-Event-ID: it names no event of this session." } },
      { status: 400 },
    );
  }
  const { stream, seq } = parsed;
  const encoder = new TextEncoder();
  const stop = new AbortController();
  const onClosing = () => stop.abort();
  options.closing.addEventListener("abort", onClosing);

  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const write = (text: string) => {
        try {
          controller.enqueue(encoder.encode(text));
          return true;
        } catch {
          stop.abort();
          return false;
        }
      };
      const end = () => {
        stop.abort();
        options.closing.removeEventListener("abort", onClosing);
        try {
          controller.close();
        } catch {}
      };
      void pump(options, stream, seq, stop.signal, write)
        .catch((error: unknown) => options.logger?.warn("a resumed MCP stream failed", { error }))
        .finally(end);
    },
    cancel() {
      stop.abort();
      options.closing.removeEventListener("abort", onClosing);
    },
  });
  return new Response(body, {
    headers: {
      "Content-Type": "text/event-stream",
      "Cache-Control": "no-cache, no-transform",
      Connection: "keep-alive",
      "X-Accel-Buffering": "no",
      "mcp-session-id": options.session,
    },
  });
}

/** Writes the stream's events after `after` and follows it until the call's result, the copy's end, or a stop. */
async function pump(
  options: ResumeOptions,
  stream: string,
  after: number,
  signal: AbortSignal,
  write: (text: string) => boolean,
): Promise<void> {
  const standalone = stream === STANDALONE;
  // The requests this stream answers (from its first event) and the copy that sends it.
  let pending: Set<string | number> | null = null;
  let copy: string | null = null;
  let lastSeen = Date.now();
  /** Since when every check said the copy is gone; null while it answers. */
  let goneSince: number | null = null;
  const give = new AbortController();

  const keepAlive = setInterval(() => {
    if (!write(": keep-alive\n\n")) return;
    // A call's stream with no event at all is gone (expired, or never ours): end it; the client starts afresh.
    if (!standalone && !copy && Date.now() - lastSeen >= LIVENESS_MS) give.abort();
  }, LIVENESS_MS);
  let checking = false;
  const copyCheck = setInterval(() => {
    if (standalone || !copy || checking || signal.aborted) return;
    checking = true;
    void options
      .copyAlive(copy)
      .catch(() => true)
      .then((alive) => {
        if (alive) goneSince = null;
        else goneSince ??= Date.now();
        if (goneSince === null || Date.now() - goneSince < COPY_GONE_AFTER_MS) return;
        if (signal.aborted || give.signal.aborted) return;
        // Gone: each request still waiting gets one error it can act on; then the stream ends.
        for (const id of pending ?? []) write(sseEvent(undefined, copyGoneError(id)));
        give.abort();
      })
      .finally(() => {
        checking = false;
      });
  }, COPY_CHECK_MS);
  const both = AbortSignal.any([signal, give.signal]);
  /** The last event the client has: what it named, then each one written here. */
  let have = after;
  try {
    while (!both.aborted) {
      try {
        // From the stream's start (a call's stream is a handful of events): its first says which requests it answers
        // and which copy runs them; what the client already has is read, not sent again.
        for await (const event of options.log.follow(options.session, stream, standalone ? have : 0, both)) {
          lastSeen = Date.now();
          copy = event.copy;
          if (event.requests && !pending) pending = new Set(event.requests);
          const message = event.message as {
            id?: string | number;
            method?: unknown;
            result?: unknown;
            error?: unknown;
          };
          const answered = !standalone && message.method === undefined && message.id !== undefined;
          if (event.seq <= have) {
            if (answered) pending?.delete(message.id!);
            // The client already has the whole answer: nothing to follow.
            if (pending?.size === 0) return;
            continue;
          }
          if (Object.keys(event.message).length === 0) continue;
          if (!write(sseEvent(`${stream}.${event.seq}`, event.message))) return;
          have = event.seq;
          if (answered) {
            const done: Set<string | number> = pending ?? new Set([message.id!]);
            done.delete(message.id!);
            pending = done;
            if (done.size === 0) return;
          }
        }
        return;
      } catch (error) {
        // The shared log could not be read (a NATS node went away and JetStream is electing a new leader): never an
        // error that escapes (it would end the process), and the stream goes on once the log answers again.
        if (both.aborted) return;
        options.logger?.warn("a resumed MCP stream could not read the shared log; trying again", { error });
        await Bun.sleep(FOLLOW_RETRY_MS);
      }
    }
  } finally {
    clearInterval(keepAlive);
    clearInterval(copyCheck);
  }
}

function sseEvent(id: string | undefined, message: JSONRPCMessage): string {
  return `event: message\n${id ? `id: ${id}\n` : ""}data: ${JSON.stringify(message)}\n\n`;
}

function copyGoneError(id: string | number): JSONRPCMessage {
  return { jsonrpc: "2.0", id, error: { code: -32000, message: COPY_GONE_MESSAGE } } as JSONRPCMessage;
}
