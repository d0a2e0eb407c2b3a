import type { Bus } from "../bus/types.ts";
import { isNatsBus } from "../bus/nats.ts";
import { createJetStreamEventStream } from "./jetstream-stream.ts";
import { createMemoryEventStream } from "./memory-stream.ts";
import type { EventStream } from "./stream.ts";

const streams = new WeakMap<Bus, EventStream>();

/**
 * The events stream that goes with a bus: JetStream on the NATS bus's connection, or the in-memory stream of
 * an in-process bus. One per bus, so every service in a process (and a service started again) shares it.
 */
export function eventStreamFor(bus: Bus): EventStream {
  let stream = streams.get(bus);
  if (!stream) {
    stream = isNatsBus(bus) ? createJetStreamEventStream(bus) : createMemoryEventStream(bus);
    streams.set(bus, stream);
  }
  return stream;
}
