import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { accounts, providerEvents } from "../services/billing/src/db/schema.ts";
import { STRIPE_API_VERSION, StripeProvider } from "../services/billing/src/provider/stripe.ts";
import { ChargeResultSchema, deriveKey, rpcMethods, signContext, type CallContextClaims } from "@hatch/contracts";
import { callRpc } from "@hatch/platform";
import { FakeStripe, signature } from "./support/fake-stripe.ts";
import { startTestHatch, TEST_SECRET, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

// Stripe's webhooks end to end: the fake sends signed events over HTTP to the gateway's POST /webhooks/stripe, which
// verifies them and forwards them to billing over the bus; the account row shows what they changed.

const SECRET_KEY = "sk_test_webhooks";
const WEBHOOK_SECRET = "whsec_webhooks";
const PRICES = { pro: "price_pro", team: "price_team" };

for (const mode of MODES) {
  describe(`Stripe webhooks (${mode})`, () => {
    let hatch: TestHatch;
    let fake: FakeStripe;
    let provider: StripeProvider;
    let n = 0;

    beforeAll(async () => {
      fake = new FakeStripe({
        secretKey: SECRET_KEY,
        apiVersion: STRIPE_API_VERSION,
        webhookSecret: WEBHOOK_SECRET,
        prices: { price_pro: 1200, price_team: 2000 },
      });
      hatch = await startTestHatch(mode, {
        services: ["orgs", "billing"],
        serviceEnv: {
          STRIPE_SECRET_KEY: SECRET_KEY,
          STRIPE_API_URL: fake.url,
          STRIPE_PRICE_PRO: PRICES.pro,
          STRIPE_PRICE_TEAM: PRICES.team,
        },
        gatewayConfig: { stripeWebhookSecret: WEBHOOK_SECRET },
      });
      fake.webhookUrl = `${hatch.baseUrl}/webhooks/stripe`;
      provider = new StripeProvider({ secretKey: SECRET_KEY, apiUrl: fake.url, prices: PRICES });
    });
    afterAll(async () => {
      await hatch?.stop();
      await fake?.stop();
    });

    const db = () => hatch.databases.get("billing")!;
    const row = async (customerId: string) =>
      (await db().select().from(accounts).where(eq(accounts.customerId, customerId)))[0]!;
    /** A billing account on the free plan with a Stripe customer, as the billing tool creates it on first use. */
    async function freeAccount(): Promise<string> {
      const accountId = `acc_wh_${mode}_${++n}`;
      const customerId = await provider.createCustomer({
        accountId,
        email: `${accountId}@example.com`,
        name: accountId,
      });
      await db().insert(accounts).values({ accountId, provider: "stripe", customerId });
      return customerId;
    }
    const sessionIdOf = (url: string) => url.split("/").pop()!;

    test("through the billing tool: Stripe Checkout's url, the person completes it, webhooks make billing show Pro with a card; a domain-style charge is made once per key", async () => {
      const user = await userWithToken(hatch, { name: "Stripe Payer" });
      const ai = await connectClient(hatch, user.accessToken);
      try {
        const first = await callOk<{
          plan: string;
          cardOnFile: boolean;
          url: string;
          actionNeeded: string | null;
          links: { plan: string };
        }>(ai, "billing", { manage: true });
        expect(first).toMatchObject({ plan: "free", cardOnFile: false });
        // Issue 26 item 3: `url` adds the card; the plan's checkout is its own link.
        expect(first.links.plan.startsWith(fake.url)).toBe(true);
        expect(await fake.completeCheckout(sessionIdOf(first.links.plan))).toEqual(expect.arrayContaining([200]));
        const after = await callOk<{ plan: string; state: string; cardOnFile: boolean }>(ai, "billing");
        expect(after).toMatchObject({ plan: "pro", state: "active", cardOnFile: true });

        // The charge another service asks for (a domain): charged off-session with the card on file, once per key.
        const claims: CallContextClaims = {
          sub: user.id,
          email: user.email,
          name: user.name,
          permissions: [],
          scope: "write",
          client: { kind: "other", name: "test", elicitation: { form: false, url: false } },
          grant: "test",
          rid: "test",
        };
        const session = await hatch.gateway.accounts.resolve(claims, { requestId: "test", traceparent: "" });
        const ctx = signContext(
          {
            ...claims,
            account: session.account,
            accountKind: session.accountKind,
            org: session.org,
            role: session.role,
            permissions: session.permissions,
          },
          deriveKey(TEST_SECRET, "ctx"),
        );
        const input = {
          accountId: session.account,
          amountMinor: 1500,
          currency: "USD",
          description: "Domain example.com",
          idempotencyKey: `stripe-domain-${mode}`,
        };
        // The bank declines first; once the card works, the same key charges (a new attempt at Stripe, whose own
        // idempotency would replay the decline), and asking again never charges twice.
        const { customerId } = (await db().select().from(accounts).where(eq(accounts.accountId, session.account)))[0]!;
        fake.declining.add(customerId);
        const declined = await callRpc(hatch.bus, "billing", rpcMethods.billing.charge, input, ChargeResultSchema, {
          ctx,
        });
        expect(declined).toMatchObject({ status: "refused", chargeId: null });
        expect(declined.message).toContain("declined");
        fake.declining.delete(customerId);
        const charged = await callRpc(hatch.bus, "billing", rpcMethods.billing.charge, input, ChargeResultSchema, {
          ctx,
        });
        expect(charged.status).toBe("charged");
        const again = await callRpc(hatch.bus, "billing", rpcMethods.billing.charge, input, ChargeResultSchema, {
          ctx,
        });
        expect(again).toEqual(charged);
        const intents = [...fake.paymentIntents.values()];
        expect(intents.filter((intent) => intent.status === "succeeded")).toHaveLength(1);
        const text = textOf(await ai.callTool({ name: "billing", arguments: {} }));
        expect(text).not.toMatch(/4242|card number/i);
      } finally {
        await ai.close();
      }
    });

    test("subscription checkout completed: plan, state, seats and card on file become Stripe's", async () => {
      const customer = await freeAccount();
      const url = await provider.checkoutUrl({
        customerId: customer,
        mode: "subscription",
        plan: "team",
        seats: 4,
        successUrl: `${hatch.baseUrl}/ok`,
        cancelUrl: `${hatch.baseUrl}/no`,
      });
      const statuses = await fake.completeCheckout(sessionIdOf(url));
      expect(statuses).toEqual([200, 200, 200, 200]);
      const account = await row(customer);
      expect(account).toMatchObject({ plan: "team", state: "active", seats: 4, cardOnFile: true });
      expect(account.subscriptionId).toMatch(/^sub_/);
      expect(account.currentPeriodEnd).toBeInstanceOf(Date);
    });

    test("setup checkout completed: card on file, still free", async () => {
      const customer = await freeAccount();
      await fake.completeCheckout(
        sessionIdOf(
          await provider.checkoutUrl({
            customerId: customer,
            mode: "setup",
            successUrl: `${hatch.baseUrl}/ok`,
            cancelUrl: `${hatch.baseUrl}/no`,
          }),
        ),
      );
      expect(await row(customer)).toMatchObject({ plan: "free", state: "active", cardOnFile: true });
    });

    test("removing one of two cards leaves a card on file; removing the last one leaves none", async () => {
      const customer = await freeAccount();
      for (let i = 0; i < 2; i++) {
        await fake.completeCheckout(
          sessionIdOf(
            await provider.checkoutUrl({
              customerId: customer,
              mode: "setup",
              successUrl: `${hatch.baseUrl}/ok`,
              cancelUrl: `${hatch.baseUrl}/no`,
            }),
          ),
        );
      }
      const cards = [...fake.paymentMethods.values()].filter((p) => p.customer === customer);
      expect(cards).toHaveLength(2);
      await fake.detachCard(cards[0]!.id as string);
      expect((await row(customer)).cardOnFile).toBe(true);
      await fake.detachCard(cards[1]!.id as string);
      expect((await row(customer)).cardOnFile).toBe(false);
    });

    test("a failed invoice makes it past_due; cancel makes it canceled; a detached card is no card", async () => {
      const customer = await freeAccount();
      await fake.completeCheckout(
        sessionIdOf(
          await provider.checkoutUrl({
            customerId: customer,
            mode: "subscription",
            plan: "pro",
            successUrl: "http://h/ok",
            cancelUrl: "http://h/no",
          }),
        ),
      );
      const { subscriptionId } = await row(customer);
      expect(await fake.failInvoice(subscriptionId!)).toEqual([200, 200]);
      expect(await row(customer)).toMatchObject({ plan: "pro", state: "past_due" });
      await fake.updateSubscription(subscriptionId!, { cancel: true });
      expect(await row(customer)).toMatchObject({ plan: "pro", state: "canceled" });
      const pm = [...fake.paymentMethods.values()].find((p) => p.customer === customer)!;
      await fake.detachCard(pm.id as string);
      expect((await row(customer)).cardOnFile).toBe(false);
    });

    test("a forged signature is 400 and changes nothing; so is a missing one", async () => {
      const customer = await freeAccount();
      const event = fake.event("payment_method.attached", { id: "pm_forged", object: "payment_method", customer });
      const payload = JSON.stringify(event);
      expect((await fake.deliver(payload, "whsec_someoneelse")).status).toBe(400);
      // The right secret over other bytes (the payload changed after signing) is a forgery too.
      const tampered = await fetch(fake.webhookUrl!, {
        method: "POST",
        headers: { "stripe-signature": signature(payload, WEBHOOK_SECRET) },
        body: payload.replace("payment_method.attached", "payment_method.detached"),
      });
      expect(tampered.status).toBe(400);
      expect((await fetch(fake.webhookUrl!, { method: "POST", body: payload })).status).toBe(400);
      // Signed long ago (a captured request replayed later): outside Stripe's 5-minute tolerance.
      const old = await fetch(fake.webhookUrl!, {
        method: "POST",
        headers: { "stripe-signature": signature(payload, WEBHOOK_SECRET, Math.floor(Date.now() / 1000) - 3600) },
        body: payload,
      });
      expect(old.status).toBe(400);
      expect((await row(customer)).cardOnFile).toBe(false);
      expect(await db().select().from(providerEvents).where(eq(providerEvents.id, event.id))).toHaveLength(0);
    });

    test("a replayed event is a duplicate and changes nothing twice", async () => {
      const customer = await freeAccount();
      const attached = fake.event("payment_method.attached", { id: "pm_r", object: "payment_method", customer });
      const detached = fake.event(
        "payment_method.detached",
        { id: "pm_r", object: "payment_method", customer: null },
        { customer },
      );
      await fake.send([attached]);
      expect((await row(customer)).cardOnFile).toBe(true);
      await fake.send([detached]);
      expect((await row(customer)).cardOnFile).toBe(false);
      const replay = await fake.deliver(JSON.stringify(attached));
      expect(replay.status).toBe(200);
      expect(await replay.json()).toMatchObject({ duplicate: true, handled: false });
      expect((await row(customer)).cardOnFile).toBe(false);
    });

    test("an older event arriving after a newer one is ignored", async () => {
      const customer = await freeAccount();
      const older = fake.event("payment_method.attached", { id: "pm_o", object: "payment_method", customer });
      const newer = fake.event(
        "payment_method.detached",
        { id: "pm_o", object: "payment_method", customer: null },
        { customer },
      );
      await fake.send([newer]);
      const late = await fake.deliver(JSON.stringify(older));
      expect(await late.json()).toMatchObject({ handled: false, duplicate: false });
      expect((await row(customer)).cardOnFile).toBe(false);
    });

    test("an event for a customer Hatch does not know is 200 and ignored; an unknown type is recorded", async () => {
      const stranger = fake.event("payment_method.attached", {
        id: "pm_s",
        object: "payment_method",
        customer: "cus_not_hatch",
      });
      const response = await fake.deliver(JSON.stringify(stranger));
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ handled: false, duplicate: false });
      expect(await db().select().from(accounts).where(eq(accounts.customerId, "cus_not_hatch"))).toHaveLength(0);
      const other = fake.event("charge.dispute.created", { id: "dp_1", object: "dispute" });
      expect((await fake.deliver(JSON.stringify(other))).status).toBe(200);
      expect(await (await fake.deliver(JSON.stringify(other))).json()).toMatchObject({ duplicate: true });
    });

    test("billing down: 503 so Stripe retries; the retry applies it", async () => {
      const customer = await freeAccount();
      const event = fake.event("payment_method.attached", { id: "pm_d", object: "payment_method", customer });
      await hatch.stopService("billing");
      try {
        expect((await fake.deliver(JSON.stringify(event))).status).toBe(503);
      } finally {
        await hatch.startService("billing");
      }
      expect((await fake.deliver(JSON.stringify(event))).status).toBe(200);
      expect((await row(customer)).cardOnFile).toBe(true);
    });
  });
}
