import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Stripe from "stripe";
import { FakeStripe } from "../../../test/support/fake-stripe.ts";
import { STRIPE_API_VERSION, StripeProvider } from "../src/provider/stripe.ts";

// The real `stripe` SDK against the fake of Stripe's HTTP API: what each provider method sends and what it makes of
// Stripe's answers. The fake refuses a wrong key, version, encoding or a reused idempotency key, so a pass here means
// the requests are well formed.

const SECRET_KEY = "sk_test_provider";
const PRICES = { pro: "price_pro", team: "price_team" };
let fake: FakeStripe;
let provider: StripeProvider;

beforeAll(() => {
  fake = new FakeStripe({
    secretKey: SECRET_KEY,
    apiVersion: STRIPE_API_VERSION,
    webhookSecret: "whsec_provider",
    prices: { price_pro: 1200, price_team: 2000 },
  });
  provider = new StripeProvider({ secretKey: SECRET_KEY, apiUrl: fake.url, prices: PRICES });
});
afterAll(() => fake.stop());

const account = (n: string) => ({ accountId: `acc_${n}`, email: `${n}@example.com`, name: `Person ${n}` });

async function customerWithCard(n: string): Promise<string> {
  const customer = await provider.createCustomer(account(n));
  const url = await provider.checkoutUrl({
    customerId: customer,
    mode: "setup",
    successUrl: "http://h/ok",
    cancelUrl: "http://h/no",
  });
  await fake.completeCheckout(url.split("/").pop()!);
  return customer;
}

describe("StripeProvider against the fake", () => {
  test("createCustomer: one customer per account, even when asked twice", async () => {
    const first = await provider.createCustomer(account("a"));
    const again = await provider.createCustomer(account("a"));
    expect(first).toMatch(/^cus_/);
    expect(again).toBe(first);
    expect(fake.customers.get(first)?.metadata).toEqual({ hatch_account: "acc_a" });
    expect(
      fake.requests
        .filter((r) => r.path === "/v1/customers")
        .every((r) => r.version === STRIPE_API_VERSION && r.idempotencyKey === "hatch-customer-acc_a"),
    ).toBe(true);
  });

  test("checkoutUrl in setup mode opens a setup session for the customer", async () => {
    const customer = await provider.createCustomer(account("b"));
    const url = await provider.checkoutUrl({
      customerId: customer,
      mode: "setup",
      successUrl: "http://h/ok",
      cancelUrl: "http://h/no",
    });
    const session = fake.sessions.get(url.split("/").pop()!)!;
    expect(session).toMatchObject({ mode: "setup", customer, status: "open", success_url: "http://h/ok" });
  });

  test("checkoutUrl in subscription mode sells the plan's price; team by seat", async () => {
    const customer = await provider.createCustomer(account("c"));
    const pro = fake.sessions.get(
      (
        await provider.checkoutUrl({
          customerId: customer,
          mode: "subscription",
          plan: "pro",
          seats: 7,
          successUrl: "http://h/ok",
          cancelUrl: "http://h/no",
        })
      )
        .split("/")
        .pop()!,
    )!;
    expect(pro.line_items).toEqual([{ price: "price_pro", quantity: "1" }]);
    const team = fake.sessions.get(
      (
        await provider.checkoutUrl({
          customerId: customer,
          mode: "subscription",
          plan: "team",
          seats: 7,
          successUrl: "http://h/ok",
          cancelUrl: "http://h/no",
        })
      )
        .split("/")
        .pop()!,
    )!;
    // Issue 26 item 1: the seats are filled in and the person may choose another number on Stripe's page.
    expect(team.line_items).toEqual([
      {
        price: "price_team",
        quantity: "7",
        adjustable_quantity: { enabled: "true", minimum: "1", maximum: "1000" },
      },
    ]);
  });

  test("checkoutUrl for an unknown customer fails (Stripe's resource_missing)", async () => {
    await expect(
      provider.checkoutUrl({
        customerId: "cus_nobody",
        mode: "setup",
        successUrl: "http://h/ok",
        cancelUrl: "http://h/no",
      }),
    ).rejects.toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
  });

  test("portalUrl returns a portal session for the customer", async () => {
    const customer = await provider.createCustomer(account("d"));
    const url = await provider.portalUrl(customer, "http://h/back");
    expect(url.startsWith(`${fake.url}/portal/`)).toBe(true);
    expect(
      [...fake.portalSessions.values()].some((s) => s.customer === customer && s.return_url === "http://h/back"),
    ).toBe(true);
  });

  test("charge without a card is refused (no_card) and never reaches PaymentIntents", async () => {
    const customer = await provider.createCustomer(account("e"));
    const before = fake.paymentIntents.size;
    const outcome = await provider.charge({
      customerId: customer,
      amountMinor: 1500,
      currency: "USD",
      description: "domain",
      idempotencyKey: "charge-e-0001",
    });
    expect(outcome).toMatchObject({ status: "refused", reason: "no_card" });
    expect(fake.paymentIntents.size).toBe(before);
  });

  test("charge with a card on file charges off-session once per key", async () => {
    const customer = await customerWithCard("f");
    const charge = {
      customerId: customer,
      amountMinor: 1500,
      currency: "USD" as const,
      description: "domain example.com",
      idempotencyKey: "charge-f-0001",
    };
    const first = await provider.charge(charge);
    const replay = await provider.charge(charge);
    expect(first).toMatchObject({ status: "charged" });
    expect(replay).toEqual(first);
    const intents = [...fake.paymentIntents.values()].filter((pi) => pi.customer === customer);
    expect(intents).toHaveLength(1);
    expect(intents[0]).toMatchObject({ amount: 1500, currency: "usd", status: "succeeded" });
  });

  test("the same key with another amount is Stripe's idempotency_error: failed, nothing charged", async () => {
    const customer = await customerWithCard("g");
    await provider.charge({
      customerId: customer,
      amountMinor: 1500,
      currency: "USD",
      description: "domain",
      idempotencyKey: "charge-g-0001",
    });
    const conflict = await provider.charge({
      customerId: customer,
      amountMinor: 9900,
      currency: "USD",
      description: "domain",
      idempotencyKey: "charge-g-0001",
    });
    expect(conflict.status).toBe("failed");
    expect([...fake.paymentIntents.values()].filter((pi) => pi.customer === customer)).toHaveLength(1);
  });

  test("a declined card is refused (declined) with a message naming no card detail", async () => {
    const customer = await customerWithCard("h");
    fake.declining.add(customer);
    const outcome = await provider.charge({
      customerId: customer,
      amountMinor: 1500,
      currency: "USD",
      description: "domain",
      idempotencyKey: "charge-h-0001",
    });
    expect(outcome).toMatchObject({ status: "refused", reason: "declined" });
    expect(JSON.stringify(outcome)).not.toContain("4242");
  });

  test("refund refunds the PaymentIntent; a replay of the same key does not refund twice", async () => {
    const customer = await customerWithCard("i");
    const outcome = await provider.charge({
      customerId: customer,
      amountMinor: 2500,
      currency: "USD",
      description: "domain",
      idempotencyKey: "charge-i-0001",
    });
    if (outcome.status !== "charged") throw new Error("expected a charge");
    await provider.refund(outcome.chargeId, "refund-i-0001");
    await provider.refund(outcome.chargeId, "refund-i-0001");
    expect([...fake.refunds.values()].filter((r) => r.payment_intent === outcome.chargeId)).toHaveLength(1);
    // A second refund under another key is Stripe's charge_already_refunded.
    await expect(provider.refund(outcome.chargeId, "refund-i-0002")).rejects.toBeInstanceOf(
      Stripe.errors.StripeInvalidRequestError,
    );
  });

  test("the fake refuses a wrong API version and a wrong key (so the checks above mean something)", async () => {
    const old = new Stripe(SECRET_KEY, {
      host: "127.0.0.1",
      port: Number(new URL(fake.url).port),
      protocol: "http",
      apiVersion: "2020-08-27" as typeof STRIPE_API_VERSION,
    });
    await expect(old.customers.create({ email: "x@example.com" })).rejects.toBeInstanceOf(
      Stripe.errors.StripeInvalidRequestError,
    );
    const wrongKey = new StripeProvider({ secretKey: "sk_test_other", apiUrl: fake.url, prices: PRICES });
    await expect(wrongKey.createCustomer(account("z"))).rejects.toBeInstanceOf(Stripe.errors.StripeAuthenticationError);
  });
});
