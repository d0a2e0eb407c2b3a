import { createHmac, randomBytes } from "node:crypto";

// A fake of Stripe's HTTP API on a real port, for the real `stripe` SDK (its host/port/protocol options). It checks
// what Stripe checks: the secret key, the Stripe-Version header, form-encoded bodies, idempotency keys (same key and
// same request → the first answer again; same key and other parameters → 400 idempotency_error). Tests drive what a
// person would do on Stripe's pages (completeCheckout, failInvoice, ...) and the fake sends the matching events,
// signed with Stripe's scheme (t=…,v1=HMAC-SHA256(secret, "t.payload")), to the webhook URL.

type Obj = Record<string, unknown>;
/** A checkout line item as it arrives, form-encoded (every value a string). */
type LineItem = {
  price?: string;
  quantity?: string;
  adjustable_quantity?: { enabled?: string; minimum?: string; maximum?: string };
};
export interface FakeEvent {
  id: string;
  type: string;
  created: number;
  data: { object: Obj; previous_attributes?: Obj };
}

export interface FakeStripeOptions {
  secretKey: string;
  apiVersion: string;
  webhookSecret: string;
  /** Prices it sells (id → amount in cents a month). */
  prices: Record<string, number>;
  /** The product name of each price, as invoice lines name it ("3 × Hatch Team (at $20.00 / month)"); default the id. */
  products?: Record<string, string>;
}

export class FakeStripe {
  readonly url: string;
  readonly customers = new Map<string, Obj>();
  readonly sessions = new Map<string, Obj>();
  readonly portalSessions = new Map<string, Obj>();
  readonly subscriptions = new Map<string, Obj>();
  readonly paymentMethods = new Map<string, Obj>();
  readonly paymentIntents = new Map<string, Obj>();
  readonly refunds = new Map<string, Obj>();
  /** Invoices of subscriptions (one per checkout, renewal failure), each with its lines: GET /v1/invoices lists them. */
  readonly invoices = new Map<string, Obj>();
  readonly events: FakeEvent[] = [];
  /** Every request it got: method, path, idempotency key, Stripe-Version (tests assert on them). */
  readonly requests: { method: string; path: string; idempotencyKey: string | null; version: string | null }[] = [];
  /** Where events go; null = kept in `events` only. */
  webhookUrl: string | null = null;
  /** Customers whose card is declined on the next charges (a test's "card_declined"). */
  readonly declining = new Set<string>();
  private readonly idempotent = new Map<string, { fingerprint: string; status: number; body: string }>();
  private readonly server: ReturnType<typeof Bun.serve>;
  private clock = Math.floor(Date.now() / 1000);

  constructor(private readonly options: FakeStripeOptions) {
    this.server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (request) => this.handle(request) });
    this.url = `http://127.0.0.1:${this.server.port}`;
  }

  stop(): Promise<void> {
    return this.server.stop(true);
  }

  /**
   * The person finishes a checkout session on Stripe's page: a card is added (and the subscription starts). `quantity`
   * is what they chose on the page, which Stripe allows only for an adjustable line item, within its bounds.
   */
  async completeCheckout(sessionId: string, chosen: { quantity?: number } = {}): Promise<number[]> {
    const session = this.sessions.get(sessionId);
    if (!session || session.status !== "open") throw new Error(`no open checkout session ${sessionId}`);
    const items = (session.line_items ?? []) as LineItem[];
    if (chosen.quantity !== undefined) {
      const adjustable = items[0]?.adjustable_quantity;
      if (adjustable?.enabled !== "true") throw new Error("the checkout page offers no quantity to change");
      const [min, max] = [Number(adjustable.minimum ?? 0), Number(adjustable.maximum ?? 99)];
      if (chosen.quantity < min || chosen.quantity > max) throw new Error(`quantity must be ${min}..${max}`);
    }
    const customer = session.customer as string;
    const pm = this.attachCard(customer);
    const events: [string, Obj][] = [["payment_method.attached", pm]];
    session.status = "complete";
    if (session.mode === "subscription") {
      const quantity = chosen.quantity ?? Number(items[0]!.quantity ?? 1);
      const sub = this.createSubscription(customer, items[0]!.price!, quantity);
      session.subscription = sub.id;
      events.push(["customer.subscription.created", sub], ["invoice.paid", this.invoice(sub, "paid")]);
    }
    events.push(["checkout.session.completed", { ...session }]);
    return this.send(events.map(([type, object]) => this.event(type, object)));
  }

  /** A renewal fails: the invoice fails and the subscription becomes past_due. */
  async failInvoice(subscriptionId: string): Promise<number[]> {
    const sub = this.subscriptions.get(subscriptionId)!;
    sub.status = "past_due";
    return this.send([
      this.event("invoice.payment_failed", this.invoice(sub, "open")),
      this.event("customer.subscription.updated", sub, { status: "active" }),
    ]);
  }

  /** The person changes the seats or cancels in the portal. */
  async updateSubscription(subscriptionId: string, change: { quantity?: number; cancel?: boolean }): Promise<number[]> {
    const sub = this.subscriptions.get(subscriptionId)!;
    const item = (sub.items as { data: Obj[] }).data[0]!;
    if (change.quantity !== undefined) item.quantity = change.quantity;
    if (change.cancel) {
      sub.status = "canceled";
      return this.send([this.event("customer.subscription.deleted", sub)]);
    }
    return this.send([this.event("customer.subscription.updated", sub)]);
  }

  /**
   * The person confirms a portal session opened at a flow's confirm step (flow_data subscription_update_confirm): the
   * subscription items get the quantities the flow named, and Stripe sends customer.subscription.updated.
   */
  async completePortalFlow(portalUrl: string): Promise<number[]> {
    const session = [...this.portalSessions.values()].find((p) => p.url === portalUrl);
    const flow = session?.flow as { subscription: string; items: { id: string; quantity: number }[] } | undefined;
    if (!session || !flow || session.completed) throw new Error(`no open portal flow at ${portalUrl}`);
    session.completed = true;
    const sub = this.subscriptions.get(flow.subscription)!;
    const data = (sub.items as { data: Obj[] }).data;
    const previous = { items: structuredClone(sub.items) };
    for (const change of flow.items) data.find((item) => item.id === change.id)!.quantity = change.quantity;
    return this.send([this.event("customer.subscription.updated", sub, previous)]);
  }

  async detachCard(paymentMethodId: string): Promise<number[]> {
    const pm = this.paymentMethods.get(paymentMethodId)!;
    const customer = pm.customer as string;
    pm.customer = null;
    const c = this.customers.get(customer)!;
    (c.invoice_settings as Obj).default_payment_method = null;
    return this.send([this.event("payment_method.detached", pm, { customer })]);
  }

  /** An event in Stripe's shape (not sent); `created` grows by one second per event so their order is clear. */
  event(type: string, object: Obj, previous?: Obj): FakeEvent {
    const event: FakeEvent = {
      id: id("evt"),
      type,
      created: ++this.clock,
      data: { object: structuredClone(object), ...(previous ? { previous_attributes: previous } : {}) },
    };
    this.events.push(event);
    return event;
  }

  /** Sends events in order to the webhook URL, signed; returns each answer's status. */
  async send(events: FakeEvent[]): Promise<number[]> {
    const statuses: number[] = [];
    if (!this.webhookUrl) return statuses;
    for (const event of events) statuses.push((await this.deliver(JSON.stringify(event))).status);
    return statuses;
  }

  /** Posts one payload as Stripe does; `secret` signs with another secret (a forgery). */
  deliver(payload: string, secret = this.options.webhookSecret): Promise<Response> {
    if (!this.webhookUrl) throw new Error("FakeStripe.webhookUrl is not set");
    return fetch(this.webhookUrl, {
      method: "POST",
      headers: { "content-type": "application/json", "stripe-signature": signature(payload, secret) },
      body: payload,
    });
  }

  private attachCard(customer: string): Obj {
    const pm: Obj = {
      id: id("pm"),
      object: "payment_method",
      type: "card",
      customer,
      card: { brand: "visa", last4: "4242" },
    };
    this.paymentMethods.set(pm.id as string, pm);
    (this.customers.get(customer)!.invoice_settings as Obj).default_payment_method = pm.id;
    return pm;
  }

  private createSubscription(customer: string, price: string, quantity: number): Obj {
    const periodEnd = this.clock + 30 * 86_400;
    const sub: Obj = {
      id: id("sub"),
      object: "subscription",
      customer,
      status: "active",
      created: this.clock,
      items: {
        object: "list",
        data: [
          {
            id: id("si"),
            object: "subscription_item",
            price: { id: price, object: "price", unit_amount: this.options.prices[price] },
            quantity,
            current_period_end: periodEnd,
          },
        ],
      },
    };
    this.subscriptions.set(sub.id as string, sub);
    return sub;
  }

  /** An invoice of the subscription's current items, in Stripe's shape (lines included, as a list returns them). */
  private invoice(sub: Obj, status: string): Obj {
    const invoiceId = id("in");
    const items = (sub.items as { data: Obj[] }).data;
    const lines = items.map((item) => {
      const price = item.price as { id: string; unit_amount: number };
      const quantity = Number(item.quantity);
      const product = this.options.products?.[price.id] ?? price.id;
      return {
        id: id("il"),
        object: "line_item",
        amount: price.unit_amount * quantity,
        currency: "usd",
        description: `${quantity} × ${product} (at $${(price.unit_amount / 100).toFixed(2)} / month)`,
        invoice: invoiceId,
        quantity,
        period: { start: this.clock, end: item.current_period_end },
        parent: {
          type: "subscription_item_details",
          subscription_item_details: { subscription: sub.id, subscription_item: item.id, proration: false },
        },
        pricing: { type: "price_details", price_details: { price: price.id, product: `prod_${price.id}` } },
      };
    });
    const total = lines.reduce((sum, line) => sum + line.amount, 0);
    const invoice: Obj = {
      id: invoiceId,
      object: "invoice",
      customer: sub.customer,
      status,
      number: `FAKE-${String(this.invoices.size + 1).padStart(4, "0")}`,
      created: this.clock,
      currency: "usd",
      total,
      amount_paid: status === "paid" ? total : 0,
      hosted_invoice_url: `${this.url}/invoice/${invoiceId}`,
      lines: { object: "list", data: lines, has_more: false, url: `/v1/invoices/${invoiceId}/lines` },
      parent: { type: "subscription_details", subscription_details: { subscription: sub.id } },
    };
    this.invoices.set(invoiceId, invoice);
    return invoice;
  }

  private async handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const key = request.headers.get("idempotency-key");
    const version = request.headers.get("stripe-version");
    this.requests.push({ method: request.method, path: url.pathname, idempotencyKey: key, version });
    if (request.headers.get("authorization") !== `Bearer ${this.options.secretKey}`) {
      return stripeError(401, "invalid_request_error", null, "Invalid API Key provided.");
    }
    if (version !== this.options.apiVersion)
      return stripeError(400, "invalid_request_error", "api_version_invalid", `Unexpected Stripe-Version ${version}.`);
    let raw = url.searchParams.toString();
    if (request.method === "POST") {
      const type = request.headers.get("content-type") ?? "";
      if (!type.startsWith("application/x-www-form-urlencoded"))
        return stripeError(400, "invalid_request_error", null, "Bodies must be form-encoded.");
      raw = await request.text();
    }
    const params = parseForm(raw);
    if (key && request.method === "POST") {
      const fingerprint = `${request.method} ${url.pathname} ${canonical(params)}`;
      const seen = this.idempotent.get(key);
      if (seen && seen.fingerprint !== fingerprint) {
        return stripeError(
          400,
          "idempotency_error",
          null,
          "Keys for idempotent requests can only be used with the same parameters they were first used with.",
        );
      }
      if (seen)
        return new Response(seen.body, {
          status: seen.status,
          headers: { "content-type": "application/json", "idempotent-replayed": "true" },
        });
      const response = this.route(request.method, url.pathname, params);
      const body = await response.clone().text();
      this.idempotent.set(key, { fingerprint, status: response.status, body });
      return response;
    }
    return this.route(request.method, url.pathname, params);
  }

  private route(method: string, path: string, p: Obj): Response {
    const parts = path.split("/").filter(Boolean);
    // Ids are the segments that carry an underscore (cus_…): /v1/customers/cus_1/payment_methods → /customers/:id/payment_methods.
    const at = `${method} /${parts
      .slice(1)
      .map((s) => (s.includes("_") && /^[a-z]+_[A-Za-z0-9_]+$/.test(s) && !KNOWN.has(s) ? ":id" : s))
      .join("/")}`;
    const missing = (what: string, value: unknown) =>
      stripeError(404, "invalid_request_error", "resource_missing", `No such ${what}: '${String(value)}'`, what);
    switch (at) {
      case "POST /customers": {
        const customer: Obj = {
          id: id("cus"),
          object: "customer",
          email: p.email ?? null,
          name: p.name ?? null,
          metadata: p.metadata ?? {},
          invoice_settings: { default_payment_method: null },
        };
        this.customers.set(customer.id as string, customer);
        return ok(customer);
      }
      case "GET /customers/:id": {
        const customer = this.customers.get(parts[2]!);
        return customer ? ok(customer) : missing("customer", parts[2]);
      }
      case "GET /customers/:id/payment_methods": {
        if (!this.customers.has(parts[2]!)) return missing("customer", parts[2]);
        const data = [...this.paymentMethods.values()].filter((pm) => pm.customer === parts[2]);
        return ok({ object: "list", data, has_more: false, url: path });
      }
      case "POST /checkout/sessions": {
        if (!this.customers.has(p.customer as string)) return missing("customer", p.customer);
        if (!p.success_url || !p.cancel_url)
          return stripeError(
            400,
            "invalid_request_error",
            "parameter_missing",
            "Missing required param: success_url.",
            "success_url",
          );
        if (p.mode === "setup" && !p.currency)
          return stripeError(
            400,
            "invalid_request_error",
            "parameter_missing",
            "Missing required param: currency.",
            "currency",
          );
        const items = p.line_items as LineItem[] | undefined;
        if (
          p.mode === "subscription" &&
          (!items?.length || !items.every((i) => i.price && i.price in this.options.prices))
        ) {
          return missing("price", items?.[0]?.price);
        }
        for (const item of items ?? []) {
          const adjustable = item.adjustable_quantity;
          if (!adjustable) continue;
          const [min, max, quantity] = [
            Number(adjustable.minimum ?? 0),
            Number(adjustable.maximum ?? 99),
            Number(item.quantity ?? 1),
          ];
          if (adjustable.enabled !== "true" && adjustable.enabled !== "false")
            return stripeError(
              400,
              "invalid_request_error",
              "parameter_missing",
              "Missing required param: line_items[0][adjustable_quantity][enabled].",
            );
          if (max > 999_999 || min > max || quantity < min || quantity > max)
            return stripeError(
              400,
              "invalid_request_error",
              "parameter_invalid_integer",
              "The quantity must be between adjustable_quantity.minimum and adjustable_quantity.maximum.",
              "line_items[0][quantity]",
            );
        }
        if (p.mode !== "setup" && p.mode !== "subscription")
          return stripeError(400, "invalid_request_error", null, "Invalid mode.", "mode");
        const sid = id("cs_test");
        const session: Obj = {
          id: sid,
          object: "checkout.session",
          mode: p.mode,
          customer: p.customer,
          status: "open",
          url: `${this.url}/pay/${sid}`,
          success_url: p.success_url,
          cancel_url: p.cancel_url,
          line_items: items,
          metadata: p.metadata ?? {},
          subscription: null,
        };
        this.sessions.set(sid, session);
        return ok(session);
      }
      case "GET /invoices": {
        // Newest first, at most `limit` (Stripe's default 10, 1..100), optionally one customer's.
        const limit = p.limit === undefined ? 10 : Number(p.limit);
        if (!Number.isInteger(limit) || limit < 1 || limit > 100)
          return stripeError(400, "invalid_request_error", "parameter_invalid_integer", "Invalid integer.", "limit");
        const all = [...this.invoices.values()]
          .filter((invoice) => p.customer === undefined || invoice.customer === p.customer)
          .sort((a, b) => Number(b.created) - Number(a.created));
        return ok({ object: "list", data: all.slice(0, limit), has_more: all.length > limit, url: path });
      }
      case "GET /subscriptions/:id": {
        const sub = this.subscriptions.get(parts[2]!);
        return sub ? ok(sub) : missing("subscription", parts[2]);
      }
      case "POST /billing_portal/sessions": {
        if (!this.customers.has(p.customer as string)) return missing("customer", p.customer);
        let flow: Obj | null = null;
        const flowData = p.flow_data as
          | { type?: string; subscription_update_confirm?: { subscription?: string; items?: Obj[] } }
          | undefined;
        if (flowData) {
          if (flowData.type !== "subscription_update_confirm")
            return stripeError(
              400,
              "invalid_request_error",
              null,
              "This fake knows only subscription_update_confirm.",
              "flow_data[type]",
            );
          const confirm = flowData.subscription_update_confirm;
          const sub = confirm?.subscription ? this.subscriptions.get(confirm.subscription) : undefined;
          if (!sub || sub.customer !== p.customer) return missing("subscription", confirm?.subscription);
          if (sub.status === "canceled")
            return stripeError(
              400,
              "invalid_request_error",
              null,
              "The subscription is canceled and cannot be updated.",
            );
          const owned = (sub.items as { data: Obj[] }).data.map((item) => item.id);
          const items = (confirm!.items ?? []).map((item) => ({
            id: String(item.id),
            quantity: Number(item.quantity),
          }));
          if (
            items.length === 0 ||
            items.some((item) => !owned.includes(item.id) || !Number.isInteger(item.quantity) || item.quantity < 1)
          )
            return stripeError(
              400,
              "invalid_request_error",
              "parameter_invalid",
              "Each item needs the id of one of the subscription's items and a positive quantity.",
              "flow_data[subscription_update_confirm][items]",
            );
          flow = { subscription: sub.id, items };
        }
        const session: Obj = {
          id: id("bps"),
          object: "billing_portal.session",
          customer: p.customer,
          return_url: p.return_url ?? null,
          url: `${this.url}/portal/${id("p")}`,
          flow,
        };
        this.portalSessions.set(session.id as string, session);
        return ok(session);
      }
      case "POST /payment_intents": {
        const customer = this.customers.get(p.customer as string);
        if (!customer) return missing("customer", p.customer);
        if (!/^\d+$/.test(String(p.amount)) || p.currency !== "usd")
          return stripeError(
            400,
            "invalid_request_error",
            "parameter_invalid_integer",
            "Invalid amount or currency.",
            "amount",
          );
        const pm =
          (p.payment_method as string | undefined) ??
          ((customer.invoice_settings as Obj).default_payment_method as string | null);
        const card = pm ? this.paymentMethods.get(pm) : undefined;
        const intent: Obj = {
          id: id("pi"),
          object: "payment_intent",
          amount: Number(p.amount),
          currency: p.currency,
          customer: p.customer,
          description: p.description ?? null,
          payment_method: pm ?? null,
          status: "requires_payment_method",
          latest_charge: null,
        };
        this.paymentIntents.set(intent.id as string, intent);
        if (!card || card.customer !== p.customer) {
          return stripeError(
            402,
            "card_error",
            "payment_method_missing",
            "The customer has no payment method to charge.",
            undefined,
            intent,
          );
        }
        if (this.declining.has(p.customer as string)) {
          return stripeError(
            402,
            "card_error",
            "card_declined",
            "Your card was declined.",
            undefined,
            { ...intent, last_payment_error: { code: "card_declined" } },
            "generic_decline",
          );
        }
        Object.assign(intent, { status: "succeeded", latest_charge: id("ch") });
        return ok(intent);
      }
      case "POST /refunds": {
        const intent = this.paymentIntents.get(p.payment_intent as string);
        if (!intent || intent.status !== "succeeded") return missing("payment_intent", p.payment_intent);
        if ([...this.refunds.values()].some((r) => r.payment_intent === intent.id)) {
          return stripeError(
            400,
            "invalid_request_error",
            "charge_already_refunded",
            `Charge ${String(intent.latest_charge)} has already been refunded.`,
          );
        }
        const refund: Obj = {
          id: id("re"),
          object: "refund",
          amount: intent.amount,
          currency: intent.currency,
          payment_intent: intent.id,
          status: "succeeded",
        };
        this.refunds.set(refund.id as string, refund);
        return ok(refund);
      }
      default:
        return stripeError(404, "invalid_request_error", null, `Unrecognized request URL (${method}: ${path}).`);
    }
  }
}

const KNOWN = new Set(["billing_portal", "payment_intents", "payment_methods"]);

/** Stripe's signature header: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.payload" under the endpoint secret>. */
export function signature(payload: string, secret: string, at = Math.floor(Date.now() / 1000)): string {
  return `t=${at},v1=${createHmac("sha256", secret).update(`${at}.${payload}`).digest("hex")}`;
}

/** Stripe's bracket form encoding (`a[b][0][c]=1`) back into objects and arrays. */
export function parseForm(raw: string): Obj {
  const root: Obj = {};
  for (const [name, value] of new URLSearchParams(raw)) {
    const keys = name.replace(/\]/g, "").split("[");
    let node: Obj = root;
    keys.forEach((k, i) => {
      if (i === keys.length - 1) node[k] = value;
      else node = (node[k] ??= {}) as Obj;
    });
  }
  return arrays(root) as Obj;
}

function arrays(value: unknown): unknown {
  if (!value || typeof value !== "object") return value;
  const entries = Object.entries(value as Obj).map(([k, v]) => [k, arrays(v)] as const);
  if (entries.length > 0 && entries.every(([k], i) => k === String(i))) return entries.map(([, v]) => v);
  return Object.fromEntries(entries);
}

function canonical(value: unknown): string {
  if (!value || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  return `{${Object.keys(value)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical((value as Obj)[k])}`)
    .join(",")}}`;
}

function id(prefix: string): string {
  return `${prefix}_${randomBytes(9).toString("base64url").replace(/[-_]/g, "x")}`;
}

function ok(body: unknown): Response {
  return Response.json(body, { headers: { "request-id": id("req") } });
}

function stripeError(
  status: number,
  type: string,
  code: string | null,
  message: string,
  param?: string,
  paymentIntent?: Obj,
  declineCode?: string,
): Response {
  const error = { type, code, message, param, payment_intent: paymentIntent, decline_code: declineCode };
  return Response.json({ error }, { status, headers: { "request-id": id("req") } });
}
