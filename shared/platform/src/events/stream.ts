import type { Logger } from "../logger.ts";
import type { HatchEvent } from "@hatch/contracts";

/**
 * The stream of events: JetStream's EVENTS in the distributed deployment, an in-memory equivalent with the
 * same semantics in the embedded one. Both deliver each published event to plain bus subscribers of its
 * subject too (at most once, for caches that only need a nudge).
 */
export interface EventStream {
  readonly kind: "jetstream" | "memory";
  /** Stores the event once: publishing the same id again within the dedupe window is a no-op. */
  publish(event: HatchEvent): Promise<void>;
  /**
   * A durable consumer: it survives restarts under the same name, starts from the oldest stored event the
   * first time, and redelivers an event until the handler returns without throwing (so handlers must be
   * idempotent). Setup failures are retried in the background; the returned handle stops it.
   */
  consume(options: ConsumeOptions): EventConsumer;
}

export interface ConsumeOptions {
  /** Durable name, e.g. `orgs-activity`: letters, digits, `-` and `_`. */
  name: string;
  /** Subject pattern before the bus prefix; default `events.>`. */
  filter?: string;
  handler: (event: HatchEvent) => Promise<void>;
  logger: Logger;
}

export interface EventConsumer {
  /** Stops taking events; the one being handled finishes; unacknowledged ones wait for the next start. */
  stop(): Promise<void>;
}

export const CONSUMER_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Wait before an event whose handler failed is offered again: 0.5 s, doubling, at most 30 s. */
export function redeliveryDelayMs(deliveries: number): number {
  return Math.min(30_000, 500 * 2 ** Math.max(0, deliveries - 1));
}
