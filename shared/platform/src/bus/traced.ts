import { HEADER_REQUEST_ID, HEADER_TRACEPARENT } from "@hatch/contracts";
import { busTarget, metrics } from "../telemetry/metrics.ts";
import { inSpan, SpanKind } from "../telemetry/tracing.ts";
import { BusError, type Bus, type BusMessage } from "./types.ts";

export interface TracedRequestOptions {
  timeoutMs: number;
  requestId?: string;
  /** The caller's trace context; absent: the span active here, if any. */
  traceparent?: string;
}

/**
 * A bus request as a client span (`send <subject>`) whose traceparent travels in the headers, so the handler's span
 * is its child; a timeout is counted in `hatch_bus_request_timeouts_total`. Errors are the bus's own (BusError).
 */
export function requestTraced(
  bus: Bus,
  subject: string,
  data: Uint8Array | string,
  options: TracedRequestOptions,
): Promise<BusMessage> {
  const attributes = {
    "messaging.system": bus.kind === "nats" ? "nats" : "hatch.memory",
    "messaging.destination.name": subject,
    "messaging.operation.type": "send",
  };
  return inSpan(
    `send ${subject}`,
    { kind: SpanKind.CLIENT, parent: options.traceparent, attributes },
    async (span, traceparent) => {
      const headers: Record<string, string> = { [HEADER_TRACEPARENT]: traceparent };
      if (options.requestId) headers[HEADER_REQUEST_ID] = options.requestId;
      try {
        return await bus.request(subject, data, { timeoutMs: options.timeoutMs, headers });
      } catch (error) {
        if (error instanceof BusError) {
          span.fail(error.code);
          if (error.code === "timeout") metrics.busTimeouts.inc({ target: busTarget(subject) });
        }
        throw error;
      }
    },
  );
}
