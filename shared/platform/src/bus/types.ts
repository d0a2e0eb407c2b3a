import { withDeadlineOr } from "../deadline.ts";

/** One message on the bus. `subject` is as the subscriber sees it: without the deployment's prefix. */
export interface BusMessage {
  subject: string;
  data: Uint8Array;
  headers: Record<string, string>;
}

/** A handler's reply to a request; returning nothing sends no reply. */
export interface BusReply {
  data: Uint8Array | string;
  headers?: Record<string, string>;
}

export type BusHandler = (msg: BusMessage) => BusReply | void | Promise<BusReply | void>;

export interface SubscribeOptions {
  /** Members of one queue group share the messages: each goes to one of them. */
  queue?: string;
}

export interface RequestOptions {
  timeoutMs: number;
  headers?: Record<string, string>;
}

export interface PublishOptions {
  headers?: Record<string, string>;
}

export interface BusSubscription {
  readonly subject: string;
  /** Stops at once: a message already on its way to this subscriber is dropped (a request to it times out). */
  unsubscribe(): void;
  /**
   * Stops taking messages without losing any: the server stops routing here, messages it routed before are handled,
   * and the promise resolves when their handlers have finished. What a stopping copy of a queue group does.
   */
  drain(): Promise<void>;
}

export type BusErrorCode = "no_responders" | "timeout" | "closed";

export class BusError extends Error {
  readonly code: BusErrorCode;
  readonly subject: string;
  constructor(code: BusErrorCode, subject: string) {
    super(`${code} on ${subject}`);
    this.name = "BusError";
    this.code = code;
    this.subject = subject;
  }
}

/**
 * The one bus API: NATS in the distributed deployment, in-process in the embedded one. Both have the same
 * semantics (wildcards `*` and `>`, queue groups, no-responders, timeouts, headers), and one contract test
 * suite runs over both.
 */
export interface Bus {
  readonly kind: "nats" | "memory";
  request(subject: string, data: Uint8Array | string, options: RequestOptions): Promise<BusMessage>;
  subscribe(subject: string, handler: BusHandler, options?: SubscribeOptions): BusSubscription;
  publish(subject: string, data: Uint8Array | string, options?: PublishOptions): void;
  /** Resolves once every subscription is registered with the server. */
  flush(): Promise<void>;
  /** Stops taking work, waits for in-flight handlers (at most `DRAIN_WAIT_MS`), then closes. Further calls fail with `closed`. */
  drain(): Promise<void>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function toBytes(data: Uint8Array | string): Uint8Array {
  return typeof data === "string" ? encoder.encode(data) : data;
}

export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

export function decodeJson(data: Uint8Array): unknown {
  return JSON.parse(decoder.decode(data));
}

/** NATS subject rules: dot-separated non-empty tokens; `*` matches one token, `>` the rest (last only). */
export function subjectMatches(pattern: string, subject: string): boolean {
  // Most patterns name one subject: compared without splitting (the in-process bus asks this of every subscription).
  if (!pattern.includes("*") && !pattern.includes(">")) return pattern === subject;
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    const token = p[i];
    if (token === ">") return s.length > i;
    if (i >= s.length) return false;
    if (token !== "*" && token !== s[i]) return false;
  }
  return p.length === s.length;
}

export function withPrefix(prefix: string, subject: string): string {
  return prefix ? `${prefix}.${subject}` : subject;
}

export function withoutPrefix(prefix: string, subject: string): string {
  return prefix && subject.startsWith(prefix + ".") ? subject.slice(prefix.length + 1) : subject;
}

/** How long drain waits for handlers still running; a stuck handler must not hold a shutdown forever. */
export const DRAIN_WAIT_MS = 2_000;

export async function settleWithin(pending: Iterable<Promise<unknown>>, ms: number): Promise<void> {
  await withDeadlineOr(Promise.allSettled([...pending]), ms, undefined);
}
