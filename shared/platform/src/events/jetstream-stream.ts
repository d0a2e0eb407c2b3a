import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type ConsumerMessages,
  type JetStreamManager,
  type JsMsg,
} from "@nats-io/jetstream";
import { withoutPrefix, withPrefix } from "../bus/types.ts";
import type { NatsBus } from "../bus/nats.ts";
import { eventSubject, type HatchEvent, HatchEventSchema } from "@hatch/contracts";
import {
  CONSUMER_NAME,
  redeliveryDelayMs,
  type ConsumeOptions,
  type EventConsumer,
  type EventStream,
} from "./stream.ts";

const NANOS_PER_MS = 1_000_000;
/** How long the stream keeps events: a consumer down longer than this would miss the oldest. */
export const EVENTS_MAX_AGE_MS = 30 * 86_400_000;
/** Within this window a second publish of the same event id is dropped by the server. */
export const EVENTS_DUPLICATE_WINDOW_MS = 10 * 60_000;
const PUBLISH_TIMEOUT_MS = 5_000;
const ACK_WAIT_MS = 30_000;
const SETUP_RETRY_MS = 2_000;

/**
 * The stream's name: EVENTS, or EVENTS_<prefix> under a bus prefix, so deployments and test runs that share
 * one NATS server never share (or overlap the subjects of) a stream.
 */
export function eventsStreamName(prefix: string): string {
  return prefix ? `EVENTS_${prefix}` : "EVENTS";
}

/** JetStream's EVENTS on the bus's own connection. */
export function createJetStreamEventStream(bus: NatsBus): EventStream {
  const nc = bus.connection;
  const js = jetstream(nc);
  const name = eventsStreamName(bus.prefix);
  const subjects = [withPrefix(bus.prefix, "events.>")];
  let ready: Promise<JetStreamManager> | null = null;

  /** Creates the stream on first use (or brings its settings up to date); a failure is retried next time. */
  function ensureStream(): Promise<JetStreamManager> {
    ready ??= (async () => {
      const jsm = await jetstreamManager(nc);
      const config = {
        subjects,
        retention: RetentionPolicy.Limits,
        storage: StorageType.File,
        discard: DiscardPolicy.Old,
        max_age: EVENTS_MAX_AGE_MS * NANOS_PER_MS,
        duplicate_window: EVENTS_DUPLICATE_WINDOW_MS * NANOS_PER_MS,
        // NATS_REPLICAS: on a cluster, a node that goes away takes no events with it (a new leader takes over).
        num_replicas: bus.replicas,
      };
      try {
        await jsm.streams.info(name);
        await jsm.streams.update(name, config);
      } catch (error) {
        if (!isNotFound(error)) throw error;
        await jsm.streams.add({ name, ...config });
      }
      return jsm;
    })().catch((error: unknown) => {
      ready = null;
      throw error;
    });
    return ready;
  }

  return {
    kind: "jetstream",
    async publish(event: HatchEvent): Promise<void> {
      await ensureStream();
      const data = new TextEncoder().encode(JSON.stringify(event));
      await js.publish(withPrefix(bus.prefix, eventSubject(event)), data, {
        msgID: event.id,
        timeout: PUBLISH_TIMEOUT_MS,
      });
    },
    consume(options: ConsumeOptions): EventConsumer {
      if (!CONSUMER_NAME.test(options.name))
        throw new Error(`consumer name "${options.name}" must be letters, digits, - or _`);
      const filter = withPrefix(bus.prefix, options.filter ?? "events.>");
      const log = options.logger.child({ consumer: options.name });
      let stopped = false;
      let messages: ConsumerMessages | null = null;
      let retry: ReturnType<typeof setTimeout> | undefined;

      const handle = async (msg: JsMsg) => {
        const parsed = HatchEventSchema.safeParse(safeJson(msg.data));
        if (!parsed.success) {
          // Redelivering what can never be read would block nothing but fill the log; drop it loudly.
          log.error("unreadable event dropped", { subject: withoutPrefix(bus.prefix, msg.subject), seq: msg.seq });
          msg.term("unreadable");
          return;
        }
        try {
          await options.handler(parsed.data);
          msg.ack();
        } catch (error) {
          log.warn("event handler failed; it will be offered again", {
            event: parsed.data.id,
            deliveries: msg.info.deliveryCount,
            error,
          });
          msg.nak(redeliveryDelayMs(msg.info.deliveryCount));
        }
      };

      const run = async (): Promise<void> => {
        try {
          const jsm = await ensureStream();
          await jsm.consumers.add(name, {
            durable_name: options.name,
            ack_policy: AckPolicy.Explicit,
            deliver_policy: DeliverPolicy.All,
            filter_subject: filter,
            ack_wait: ACK_WAIT_MS * NANOS_PER_MS,
            max_deliver: -1,
          });
          const consumer = await js.consumers.get(name, options.name);
          if (stopped) return;
          messages = await consumer.consume({ max_messages: 64 });
          for await (const msg of messages) {
            if (stopped) break;
            await handle(msg);
          }
          if (!stopped) throw new Error("the consumer's message feed ended");
        } catch (error) {
          if (stopped) return;
          log.warn("event consumer not running; retrying", { error });
          retry = setTimeout(() => void (loop = run()), SETUP_RETRY_MS);
        }
      };
      let loop = run();

      return {
        async stop() {
          stopped = true;
          clearTimeout(retry);
          await messages?.close();
          await loop;
        },
      };
    },
  };
}

/** Deletes the stream (test runs clean up their own). */
export async function deleteEventsStream(bus: NatsBus): Promise<void> {
  const jsm = await jetstreamManager(bus.connection);
  await jsm.streams.delete(eventsStreamName(bus.prefix)).catch((error: unknown) => {
    if (!isNotFound(error)) throw error;
  });
}

function isNotFound(error: unknown): boolean {
  return error instanceof Error && (error.name === "StreamNotFoundError" || /stream not found/i.test(error.message));
}

function safeJson(data: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(data));
  } catch {
    return undefined;
  }
}
