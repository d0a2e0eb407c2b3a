import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm, type KV, type KvOptions } from "@nats-io/kv";
import type { Logger } from "../logger.ts";
import type { NatsBus } from "./nats.ts";

// Every JetStream stream and key-value bucket Hatch makes gets the bus's replicas (NATS_REPLICAS): 1 on one server,
// 3 on a 3-node cluster, so losing the node that leads one does not lose it (its followers elect a new leader). A
// stream or bucket made earlier with another number is brought to it when a process opens it: raising NATS_REPLICAS
// and restarting is the whole upgrade.

/** Opens (creating when missing) a key-value bucket with the bus's replicas, bringing an existing one up to them. */
export async function openKvBucket(
  bus: NatsBus,
  name: string,
  options: Partial<KvOptions>,
  logger?: Logger,
): Promise<KV> {
  const kv = await new Kvm(bus.connection).create(name, { ...options, replicas: bus.replicas });
  await ensureReplicas(bus, `KV_${name}`, logger);
  return kv;
}

/** Sets a stream's replicas to the bus's when they differ (JetStream moves the data; the stream stays usable). */
export async function ensureReplicas(bus: NatsBus, stream: string, logger?: Logger): Promise<void> {
  const jsm = await jetstreamManager(bus.connection);
  const info = await jsm.streams.info(stream);
  const from = info.config.num_replicas;
  if (from === bus.replicas) return;
  await jsm.streams.update(stream, { num_replicas: bus.replicas });
  logger?.info("JetStream replicas changed", { stream, from, to: bus.replicas });
}
