import type { EventStore, JSONRPCMessage } from "@modelcontextprotocol/server";

// What lets a client resume an SSE stream after it dropped (`Last-Event-ID`): the messages each of one session's
// streams sent, kept per session and bounded. An id is `<stream>.<sequence>`, so a replay finds its stream at once
// and sends, in order, only what came after. The store lives and dies with its session: nothing outlives it.

/** Messages kept per stream; an older id than that cannot be resumed from (the client starts afresh). */
const PER_STREAM = 200;
/** Streams kept per session (the oldest is forgotten). */
const STREAMS = 50;

export class SessionEventStore implements EventStore {
  private readonly streams = new Map<string, { next: number; events: { seq: number; message: JSONRPCMessage }[] }>();

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    let stream = this.streams.get(streamId);
    if (!stream) {
      if (this.streams.size >= STREAMS) this.streams.delete(this.streams.keys().next().value!);
      stream = { next: 1, events: [] };
      this.streams.set(streamId, stream);
    }
    const seq = stream.next++;
    stream.events.push({ seq, message });
    if (stream.events.length > PER_STREAM) stream.events.shift();
    return `${streamId}.${seq}`;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    const streamId = streamOf(eventId);
    return streamId && this.streams.has(streamId) ? streamId : undefined;
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const streamId = streamOf(lastEventId);
    const stream = streamId ? this.streams.get(streamId) : undefined;
    if (!streamId || !stream) return "";
    const after = Number(lastEventId.slice(streamId.length + 1));
    for (const event of stream.events) {
      if (event.seq > after) await send(`${streamId}.${event.seq}`, event.message);
    }
    return streamId;
  }
}

function streamOf(eventId: string): string | undefined {
  const cut = eventId.lastIndexOf(".");
  if (cut <= 0 || !/^\d+$/.test(eventId.slice(cut + 1))) return undefined;
  return eventId.slice(0, cut);
}
