/** One server-sent event as a client reads it. */
export interface SseEvent {
  id?: string;
  retry?: string;
  data?: string;
}

/** Reads SSE events from a response body until `enough` says stop (or the stream ends), then drops the connection. */
export async function readEvents(response: Response, enough: (events: SseEvent[]) => boolean): Promise<SseEvent[]> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const events: SseEvent[] = [];
  let buffer = "";
  while (!enough(events)) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut: number;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const event: SseEvent = {};
      for (const line of block.split("\n")) {
        const colon = line.indexOf(":");
        if (colon <= 0) continue;
        const field = line.slice(0, colon) as keyof SseEvent;
        const value = line.slice(colon + 1).replace(/^ /, "");
        if (field === "id" || field === "retry" || field === "data")
          event[field] = event[field] === undefined ? value : `${event[field]}\n${value}`;
      }
      if (Object.keys(event).length) events.push(event);
    }
  }
  await reader.cancel().catch(() => undefined);
  return events;
}
