import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { STRIPE_API_VERSION } from "../services/billing/src/provider/stripe.ts";
import { callRpc } from "@hatch/platform";
import { ChargeResultSchema, deriveKey, ReceiptsSchema, rpcMethods } from "@hatch/contracts";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { gatewaySignedContext, userClaims } from "./support/call-context.ts";
import { csrfOf, signedInJar } from "./support/cookies.ts";
import { FakeStripe } from "./support/fake-stripe.ts";
import { joinOrg } from "./support/orgs.ts";
import { startTestHatch, TEST_SECRET, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

// Invoices and receipts on /dashboard/billing, from the provider: an organization pays for Team with 3 seats (Stripe's
// checkout through the real SDK against the fake, which lists invoices with their lines in Stripe's wire format; or the
// local provider's checkout page), then a domain is charged. The billing page shows the seats line (quantity 3, $60.00)
// and the domain's receipt; a member without the billing permission and another person see none of it.

const PASSWORD = "correct horse battery";
const SECRET_KEY = "sk_test_receipts";
const WEBHOOK_SECRET = "whsec_receipts";

for (const mode of MODES) {
  for (const provider of ["local", "stripe"] as const) {
    describe(`billing invoices and receipts (${mode}, ${provider})`, () => {
      let hatch: TestHatch;
      let fake: FakeStripe | undefined;
      let owner: Awaited<ReturnType<typeof userWithToken>>;
      let member: Awaited<ReturnType<typeof userWithToken>>;
      let stranger: Awaited<ReturnType<typeof userWithToken>>;
      let ownerAi: Client;
      let memberAi: Client;
      const ctxKey = deriveKey(TEST_SECRET, "ctx");
      const tag = `${mode}-${provider}-${process.pid}`;
      const domain = `receipts-${mode}-${provider}.test`;

      beforeAll(async () => {
        if (provider === "stripe")
          fake = new FakeStripe({
            secretKey: SECRET_KEY,
            apiVersion: STRIPE_API_VERSION,
            webhookSecret: WEBHOOK_SECRET,
            prices: { price_pro: 1200, price_team: 2000 },
            products: { price_pro: "Hatch Pro", price_team: "Hatch Team" },
          });
        hatch = await startTestHatch(mode, {
          serviceEnv: fake
            ? {
                STRIPE_SECRET_KEY: SECRET_KEY,
                STRIPE_API_URL: fake.url,
                STRIPE_PRICE_PRO: "price_pro",
                STRIPE_PRICE_TEAM: "price_team",
              }
            : {},
          gatewayConfig: fake ? { stripeWebhookSecret: WEBHOOK_SECRET } : {},
        });
        if (fake) fake.webhookUrl = `${hatch.baseUrl}/webhooks/stripe`;
        owner = await userWithToken(hatch, { name: "Rita", email: `rcpt-owner-${tag}@example.com` });
        member = await userWithToken(hatch, { name: "Mel", email: `rcpt-member-${tag}@example.com` });
        stranger = await userWithToken(hatch, { name: "Stan", email: `rcpt-stranger-${tag}@example.com` });
        ownerAi = await connectClient(hatch, owner.accessToken);
        memberAi = await connectClient(hatch, member.accessToken);
        await callOk(ownerAi, "org_setup", { action: "create", name: `Receipts ${tag}` });
        await joinOrg(ownerAi, memberAi, member.email, { role: "member" });
      }, 90_000);
      afterAll(async () => {
        await Promise.all([ownerAi?.close(), memberAi?.close()]);
        await hatch?.stop();
        await fake?.stop();
      });

      const signedIn = (email: string) => signedInJar(hatch.baseUrl, email, PASSWORD);
      const claimsOf = (user: typeof owner) => userClaims(user);
      const ctxOf = (user: typeof owner) => gatewaySignedContext(hatch.gateway, ctxKey, claimsOf(user));
      test("Team with 3 seats and a domain purchase show as receipts with their lines", async () => {
        const jar = await signedIn(owner.email);
        const empty = await jar.fetch(`${hatch.baseUrl}/dashboard/billing`);
        expect(empty.status).toBe(200);
        const emptyBody = await empty.text();
        expect(emptyBody).toContain("No invoices or receipts yet.");
        // The checkout button says what it pays: one seat now (the owner and the member are two people).
        expect(emptyBody).toContain("Pay $40 a month for 2 seats");

        // The button leads to the provider's checkout for Team with those seats; the person pays 3 there.
        const paying = await jar.post(`${hatch.baseUrl}/dashboard/billing`, {
          csrf: csrfOf(emptyBody),
          plan: "team",
          seats: "3",
        });
        expect(paying.status).toBe(303);
        const checkout = paying.headers.get("location")!;
        if (fake) {
          await fake.completeCheckout(checkout.split("/").pop()!);
        } else {
          expect(new URL(checkout).searchParams.get("seats")).toBe("3");
          const page = await jar.fetch(checkout);
          const done = await jar.post(`${hatch.baseUrl}/dashboard/billing/checkout`, {
            csrf: csrfOf(await page.text()),
            card: "4242 4242 4242 4242",
            plan: "team",
            seats: "3",
          });
          expect(done.status).toBe(303);
        }
        const charged = await callRpc(
          hatch.bus,
          "billing",
          rpcMethods.billing.charge,
          {
            accountId: (await hatch.gateway.accounts.resolve(claimsOf(owner), { requestId: "t", traceparent: "" }))
              .account,
            amountMinor: 1500,
            currency: "USD",
            description: `Domain ${domain}, first year`,
            idempotencyKey: `receipt-${tag}`,
          },
          ChargeResultSchema,
          { ctx: await ctxOf(owner) },
        );
        expect(charged.status).toBe("charged");

        const { receipts } = await callRpc(hatch.bus, "billing", rpcMethods.billing.receipts, {}, ReceiptsSchema, {
          ctx: await ctxOf(owner),
        });
        const seats = receipts.find((r) => r.lines.some((l) => l.quantity === 3));
        expect(seats?.total.formatted).toBe("$60.00");
        expect(seats?.status).toBe("paid");
        const bought = receipts.find((r) => r.lines[0]?.description === `Domain ${domain}, first year`);
        expect(bought).toMatchObject({ status: "paid", total: { amountMinor: 1500, formatted: "$15.00" } });

        const page = await (await jar.fetch(`${hatch.baseUrl}/dashboard/billing`)).text();
        expect(page).toContain('data-plan="team"');
        expect(page).toContain(`Domain ${domain}, first year`);
        expect(page).toContain("$60.00");
        if (fake) {
          // Stripe's own line words, its invoice number and its page of the invoice.
          expect(page).toContain("3 × Hatch Team (at $20.00 / month)");
          expect(page).toMatch(/Invoice FAKE-\d{4}/);
          expect(page).toContain(`${fake.url}/invoice/`);
          expect(fake.requests.some((r) => r.method === "GET" && r.path === "/v1/invoices")).toBe(true);
        } else {
          expect(page).toMatch(/Team seat, \d{4}-\d{2}-\d{2} to \d{4}-\d{2}-\d{2}/);
        }
      });

      test("a member without the billing permission and another person see none of the receipts", async () => {
        const refused = callRpc(hatch.bus, "billing", rpcMethods.billing.receipts, {}, ReceiptsSchema, {
          ctx: await ctxOf(member),
        });
        await expect(refused).rejects.toMatchObject({ code: "forbidden" });
        const memberPage = await (await signedIn(member.email)).fetch(`${hatch.baseUrl}/dashboard/billing`);
        expect(memberPage.status).toBe(403);
        expect(await memberPage.text()).not.toContain(domain);

        const jar = await signedIn(stranger.email);
        const own = await jar.fetch(`${hatch.baseUrl}/dashboard/billing`);
        expect(own.status).toBe(200);
        const body = await own.text();
        expect(body).toContain("No invoices or receipts yet.");
        expect(body).not.toContain(domain);
      });
    });
  }
}
