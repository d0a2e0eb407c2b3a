import { randomBytes } from "node:crypto";

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

/** URL-safe random id with `bytes` of entropy. */
export function randomId(bytes = 16): string {
  return randomBytes(bytes).toString("base64url");
}

/** An incoming request id is used only when it looks like one; anything else is replaced. */
export function acceptRequestId(candidate: string | null | undefined): string {
  return candidate && REQUEST_ID.test(candidate) ? candidate : randomId(12);
}

/** W3C trace context: keep the caller's trace id when valid, always start a new span. */
export function childTraceparent(incoming: string | null | undefined): string {
  const match = incoming ? TRACEPARENT.exec(incoming) : null;
  if (match?.[1] && !/^0+$/.test(match[1])) return `00-${match[1]}-${randomBytes(8).toString("hex")}-01`;
  // A new trace: both ids from one draw of randomness.
  const ids = randomBytes(24).toString("hex");
  return `00-${ids.slice(0, 32)}-${ids.slice(32)}-01`;
}

export function traceIdOf(traceparent: string | null | undefined): string | undefined {
  return traceparent ? TRACEPARENT.exec(traceparent)?.[1] : undefined;
}
