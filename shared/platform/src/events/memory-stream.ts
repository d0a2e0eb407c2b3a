import { encodeJson, subjectMatches, type Bus } from "../bus/types.ts";
import { eventSubject, type HatchEvent } from "@hatch/contracts";
import {
  CONSUMER_NAME,
  redeliveryDelayMs,
  type ConsumeOptions,
  type EventConsumer,
  type EventStream,
} from "./stream.ts";

/** How many events the embedded stream keeps (like a stream's max_msgs): the oldest go first. */
export const MEMORY_STREAM_MAX_EVENTS = 10_000;

interface Stored {
  seq: number;
  subject: string;
  event: HatchEvent;
}

interface ConsumerState {
  filter: string;
  /** The highest sequence offered so far; everything after it is new. */
  offeredUpTo: number;
  /** Offered but not acknowledged yet, by sequence, with their delivery counts. */
  unacked: Map<number, number>;
  /** Sequences waiting to be offered (new ones, and failed ones whose delay has passed). */
  ready: number[];
  attached: ConsumeOptions | null;
  running: Promise<void> | null;
  timers: Set<ReturnType<typeof setTimeout>>;
}

/**
 * The embedded EVENTS stream: lives as long as the process (as long as its bus), dedupes by event id, and
 * keeps every durable consumer's position, so a service stopped and started again catches up from where it
 * was. Handlers run one event at a time per consumer; a failed event is offered again after a delay while
 * later ones go on.
 */
export function createMemoryEventStream(bus: Bus, options: { maxEvents?: number } = {}): EventStream {
  const maxEvents = options.maxEvents ?? MEMORY_STREAM_MAX_EVENTS;
  const log: Stored[] = [];
  const ids = new Set<string>();
  const consumers = new Map<string, ConsumerState>();
  let nextSeq = 1;

  const find = (seq: number) => {
    const first = log[0]?.seq ?? nextSeq;
    return log[seq - first];
  };

  function offerNew(state: ConsumerState): void {
    for (const stored of log) {
      if (stored.seq <= state.offeredUpTo) continue;
      state.offeredUpTo = stored.seq;
      if (subjectMatches(state.filter, stored.subject)) state.ready.push(stored.seq);
    }
  }

  function pump(state: ConsumerState): void {
    if (state.running || !state.attached) return;
    state.running = (async () => {
      while (state.attached && state.ready.length > 0) {
        const seq = state.ready.shift()!;
        const stored = find(seq);
        if (!stored) {
          state.unacked.delete(seq);
          continue;
        }
        const deliveries = (state.unacked.get(seq) ?? 0) + 1;
        state.unacked.set(seq, deliveries);
        const consumer = state.attached;
        try {
          await consumer.handler(structuredClone(stored.event));
          state.unacked.delete(seq);
        } catch (error) {
          consumer.logger.warn("event handler failed; it will be offered again", {
            consumer: consumer.name,
            event: stored.event.id,
            deliveries,
            error,
          });
          const timer = setTimeout(() => {
            state.timers.delete(timer);
            state.ready.push(seq);
            pump(state);
          }, redeliveryDelayMs(deliveries));
          state.timers.add(timer);
        }
      }
    })().finally(() => {
      state.running = null;
      if (state.attached && state.ready.length > 0) pump(state);
    });
  }

  return {
    kind: "memory",
    async publish(event: HatchEvent): Promise<void> {
      if (ids.has(event.id)) return;
      const stored: Stored = { seq: nextSeq++, subject: eventSubject(event), event: structuredClone(event) };
      ids.add(event.id);
      log.push(stored);
      while (log.length > maxEvents) ids.delete(log.shift()!.event.id);
      try {
        bus.publish(stored.subject, encodeJson(event));
      } catch {
        // A closed bus has no plain subscribers left; the stream still holds the event.
      }
      for (const state of consumers.values()) {
        offerNew(state);
        pump(state);
      }
    },
    consume(options: ConsumeOptions): EventConsumer {
      if (!CONSUMER_NAME.test(options.name))
        throw new Error(`consumer name "${options.name}" must be letters, digits, - or _`);
      const filter = options.filter ?? "events.>";
      let state = consumers.get(options.name);
      if (!state) {
        state = {
          filter,
          offeredUpTo: 0,
          unacked: new Map(),
          ready: [],
          attached: null,
          running: null,
          timers: new Set(),
        };
        consumers.set(options.name, state);
      } else if (state.filter !== filter) {
        throw new Error(`consumer "${options.name}" already exists with filter ${state.filter}`);
      }
      const current = state;
      // Anything offered to a consumer that stopped before acknowledging it is offered again.
      current.ready = [...new Set([...current.unacked.keys(), ...current.ready])].sort((a, b) => a - b);
      current.attached = options;
      offerNew(current);
      pump(current);
      return {
        async stop() {
          if (current.attached === options) current.attached = null;
          for (const timer of current.timers) clearTimeout(timer);
          current.timers.clear();
          await current.running;
        },
      };
    },
  };
}
