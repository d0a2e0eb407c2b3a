import { callRpc, type Bus, type Logger } from "@hatch/platform";
import { isToolError, ProviderWebhookResultSchema, randomId, rpcMethods } from "@hatch/contracts";
import Stripe from "stripe";

/** Stripe's events are a few kilobytes; anything far larger is not one. */
const MAX_EVENT_BYTES = 512 * 1024;
/** Billing answers in milliseconds; past this Stripe gets a 503 and sends the event again later. */
const BILLING_TIMEOUT_MS = 10_000;

export interface StripeWebhookOptions {
  /** STRIPE_WEBHOOK_SECRET; null = Stripe is not used here (the route answers 404). */
  secret: string | null;
  bus: Bus;
  logger: Logger;
}

/**
 * POST /webhooks/stripe: verifies Stripe's signature on the raw body (`constructEventAsync`: the synchronous form
 * throws under Bun, and its default tolerance refuses events signed more than 5 minutes ago, so a captured request
 * cannot be replayed later), then forwards the event to billing, which applies each event id once.
 * Answers: 400 bad or missing signature (nothing forwarded); 200 once billing answered; 503 when billing does not
 * answer or fails, so Stripe retries. Logs name the event's id and type only, never its payload.
 */
export function stripeWebhookHandler(options: StripeWebhookOptions): (request: Request) => Promise<Response> {
  const { secret, bus, logger } = options;
  return async (request) => {
    if (!secret) return json(404, { error: "Stripe webhooks are not configured on this Hatch server." });
    const signature = request.headers.get("stripe-signature");
    if (!signature) return json(400, { error: "Missing Stripe-Signature header." });
    const length = Number(request.headers.get("content-length") ?? 0);
    if (length > MAX_EVENT_BYTES) return json(413, { error: "The event is too large." });
    const body = await request.text();
    if (body.length > MAX_EVENT_BYTES) return json(413, { error: "The event is too large." });
    let event: Stripe.Event;
    try {
      event = await Stripe.webhooks.constructEventAsync(body, signature, secret);
    } catch {
      logger.warn("stripe webhook with a bad signature refused");
      return json(400, { error: "The Stripe signature does not match this payload." });
    }
    const requestId = randomId(12);
    try {
      const result = await callRpc(
        bus,
        "billing",
        rpcMethods.billing.webhook,
        { provider: "stripe", event },
        ProviderWebhookResultSchema,
        {
          timeoutMs: BILLING_TIMEOUT_MS,
          requestId,
        },
      );
      logger.info("stripe webhook forwarded", { event: event.id, type: event.type, ...result });
      return json(200, { received: true, ...result });
    } catch (error) {
      // Billing down, slow or failing: Stripe retries on any non-2xx, so the event is not lost.
      logger.warn("stripe webhook not processed; Stripe will retry", {
        event: event.id,
        type: event.type,
        code: isToolError(error) ? error.code : "internal",
        rid: requestId,
      });
      return json(503, { error: "Billing could not process the event now; send it again later." });
    }
  };
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}
