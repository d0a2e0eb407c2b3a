import type { Logger } from "../logger.ts";
import {
  BusError,
  DRAIN_WAIT_MS,
  settleWithin,
  subjectMatches,
  toBytes,
  type Bus,
  type BusHandler,
  type BusMessage,
  type BusReply,
  type BusSubscription,
  type PublishOptions,
  type RequestOptions,
  type SubscribeOptions,
} from "./types.ts";

interface Entry {
  pattern: string;
  queue?: string;
  handler: BusHandler;
}

/**
 * The embedded bus: one process, same semantics as NATS. Delivery is asynchronous (never inside the
 * caller's stack), payloads are copied, and a request with no subscriber fails at once with `no_responders`.
 */
export function createMemoryBus(options: { logger?: Logger } = {}): Bus {
  const entries = new Set<Entry>();
  const roundRobin = new Map<string, number>();
  const inFlight = new Set<Promise<unknown>>();
  let closed = false;

  function targets(subject: string): Entry[] {
    const plain: Entry[] = [];
    const groups = new Map<string, Entry[]>();
    for (const entry of entries) {
      if (!subjectMatches(entry.pattern, subject)) continue;
      if (!entry.queue) plain.push(entry);
      else groups.set(entry.queue, [...(groups.get(entry.queue) ?? []), entry]);
    }
    for (const [queue, members] of groups) {
      const next = (roundRobin.get(queue) ?? 0) + 1;
      roundRobin.set(queue, next);
      plain.push(members[next % members.length]!);
    }
    return plain;
  }

  function deliver(entry: Entry, msg: BusMessage): Promise<BusReply | void> {
    const run = (async () => entry.handler({ ...msg, data: msg.data.slice(), headers: { ...msg.headers } }))();
    const tracked = run.catch((error: unknown) => {
      options.logger?.error("bus handler failed", { subject: msg.subject, error });
      return undefined;
    });
    inFlight.add(tracked);
    void tracked.finally(() => inFlight.delete(tracked));
    return tracked;
  }

  return {
    kind: "memory",
    request(subject: string, data: Uint8Array | string, opts: RequestOptions): Promise<BusMessage> {
      if (closed) return Promise.reject(new BusError("closed", subject));
      const found = targets(subject);
      if (found.length === 0) return Promise.reject(new BusError("no_responders", subject));
      const msg: BusMessage = { subject, data: toBytes(data), headers: { ...opts.headers } };
      return new Promise((resolve, reject) => {
        let settled = false;
        const timer = setTimeout(() => {
          settled = true;
          reject(new BusError("timeout", subject));
        }, opts.timeoutMs);
        for (const entry of found) {
          queueMicrotask(() => {
            void deliver(entry, msg).then((reply) => {
              if (settled || !reply) return;
              settled = true;
              clearTimeout(timer);
              resolve({ subject, data: toBytes(reply.data).slice(), headers: { ...reply.headers } });
            });
          });
        }
      });
    },
    subscribe(pattern: string, handler: BusHandler, opts: SubscribeOptions = {}): BusSubscription {
      if (closed) throw new BusError("closed", pattern);
      const running = new Set<Promise<unknown>>();
      const entry: Entry = {
        pattern,
        queue: opts.queue,
        handler: (msg) => {
          const run = (async () => handler(msg))();
          const tracked = run.catch(() => undefined);
          running.add(tracked);
          void tracked.finally(() => running.delete(tracked));
          return run;
        },
      };
      entries.add(entry);
      return {
        subject: pattern,
        unsubscribe: () => void entries.delete(entry),
        async drain() {
          entries.delete(entry);
          await Promise.allSettled([...running]);
        },
      };
    },
    publish(subject: string, data: Uint8Array | string, opts: PublishOptions = {}): void {
      if (closed) throw new BusError("closed", subject);
      const msg: BusMessage = { subject, data: toBytes(data), headers: { ...opts.headers } };
      for (const entry of targets(subject)) queueMicrotask(() => void deliver(entry, msg));
    },
    async flush(): Promise<void> {},
    async drain(): Promise<void> {
      closed = true;
      entries.clear();
      await settleWithin(inFlight, DRAIN_WAIT_MS);
    },
  };
}
