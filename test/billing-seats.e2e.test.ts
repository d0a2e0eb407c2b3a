import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { Browser } from "../gateway/test/oauth-harness.ts";
import { csrfOf } from "../gateway/test/support.ts";
import { STRIPE_API_VERSION } from "../services/billing/src/provider/stripe.ts";
import { eventually } from "./support/eventually.ts";
import { FakeStripe } from "./support/fake-stripe.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { refused } from "./support/orgs.ts";
import { MODES } from "./support/servers.ts";

// Issue 26 items 1 and 3 through the SDK client, with the local provider (its pages, over HTTP) and with Stripe (the
// real SDK against the fake, which speaks Stripe's wire format): seats are chosen at checkout (members plus open
// invitations filled in), changed by link (the subscription item's quantity), and a refusal names seats and that link;
// `billing {manage: true}` gives one page to add a card and another to change the plan.

type User = Awaited<ReturnType<typeof userWithToken>>;
type Billing = {
  plan: string;
  cardOnFile: boolean;
  actionNeeded: string | null;
  url: string | null;
  links?: { addCard: string | null; plan: string | null; seats: string | null };
};

const PASSWORD = "correct horse battery";
const SECRET_KEY = "sk_test_seats";
const WEBHOOK_SECRET = "whsec_seats";

for (const mode of MODES) {
  for (const provider of ["local", "stripe"] as const) {
    describe(`seats and billing links (${mode}, ${provider})`, () => {
      let hatch: TestHatch;
      let fake: FakeStripe | undefined;
      let owner: User, solo: User;
      let o: Client, s: Client;
      let browser: Browser;
      let n = 0;
      const invite = (count: number) =>
        o.callTool({
          name: "org_invite",
          arguments: {
            action: "invite",
            emails: Array.from({ length: count }, () => `seat${++n}-${provider}-${mode}-${process.pid}@example.com`),
            role: "member",
          },
        });

      beforeAll(async () => {
        if (provider === "stripe")
          fake = new FakeStripe({
            secretKey: SECRET_KEY,
            apiVersion: STRIPE_API_VERSION,
            webhookSecret: WEBHOOK_SECRET,
            prices: { price_pro: 1200, price_team: 2000 },
          });
        hatch = await startTestHatch(mode, {
          serviceEnv: {
            BILLING_ENFORCE_LIMITS: "true",
            ...(fake
              ? {
                  STRIPE_SECRET_KEY: SECRET_KEY,
                  STRIPE_API_URL: fake.url,
                  STRIPE_PRICE_PRO: "price_pro",
                  STRIPE_PRICE_TEAM: "price_team",
                }
              : {}),
          },
          gatewayConfig: fake ? { stripeWebhookSecret: WEBHOOK_SECRET } : {},
        });
        if (fake) fake.webhookUrl = `${hatch.baseUrl}/webhooks/stripe`;
        owner = await userWithToken(hatch, { name: "Sita Seats" });
        solo = await userWithToken(hatch, { name: "Pia Person" });
        [o, s] = await Promise.all([connectClient(hatch, owner.accessToken), connectClient(hatch, solo.accessToken)]);
        await callOk(o, "org_setup", { action: "create", name: `Seats ${provider} ${mode}` });
        browser = new Browser((p, init) => fetch(`${hatch.baseUrl}${p}`, { ...init, redirect: "manual" }));
        expect((await browser.signIn(owner.email, PASSWORD)).status).toBe(303);
      }, 60_000);
      afterAll(async () => {
        await Promise.all([o?.close(), s?.close()]);
        await hatch?.stop();
        await fake?.stop();
      });

      /** The checkout a link opens: its mode, plan and the seats filled in (Stripe's session, or the local page's query). */
      function checkoutOf(url: string) {
        if (fake) {
          const session = fake.sessions.get(url.split("/").pop()!)!;
          const item = (
            session.line_items as { price: string; quantity: string; adjustable_quantity?: unknown }[]
          )?.[0];
          return {
            mode: session.mode,
            plan: item ? (item.price === "price_team" ? "team" : "pro") : null,
            seats: item ? Number(item.quantity) : null,
            adjustable: item?.adjustable_quantity ?? null,
          };
        }
        const query = new URL(url).searchParams;
        return {
          mode: query.get("mode"),
          plan: query.get("plan"),
          seats: query.has("seats") ? Number(query.get("seats")) : null,
          adjustable: null,
        };
      }

      test("item 3: manage on free without a card gives an add-card link and a separate plan link", async () => {
        const result = await s.callTool({ name: "billing", arguments: { manage: true } });
        const data = result.structuredContent as Billing;
        expect(data).toMatchObject({ plan: "free", cardOnFile: false, actionNeeded: "add a card" });
        expect(data.url).toBe(data.links!.addCard);
        expect(checkoutOf(data.links!.addCard!)).toMatchObject({ mode: "setup", plan: null });
        expect(checkoutOf(data.links!.plan!)).toMatchObject({ mode: "subscription", plan: "pro" });
        expect(data.links!.seats).toBeNull();
        expect(textOf(result)).toContain(`To add a card, open ${data.links!.addCard}`);
        expect(textOf(result)).toContain(`To change the plan: ${data.links!.plan}`);
        // Who each plan is for: a person is offered Pro, never Team.
        expect(textOf(result)).toContain("Pro $12/month (one person's apps, in a personal account)");
        expect(textOf(result)).not.toContain("Team");
        expect(await refused(s, "billing", { seats: 2 })).toContain("Seats are for organizations");
      });

      test("item 1: Team checkout fills in members plus open invitations; the person chooses seats there", async () => {
        expect((await invite(2)).isError).not.toBe(true); // 1 member + 2 invitations: the free plan's 3 people
        const over = textOf(await invite(1));
        expect(over).toContain("The free plan allows 3 people, and this account has 3.");
        expect(over).toContain(`the user moves to Team with 4 seats at ${hatch.baseUrl}/dashboard/billing?seats=4`);

        const manage = await callOk<Billing>(o, "billing", { manage: true });
        expect(manage.links!.addCard).not.toBe(manage.links!.plan);
        const checkout = checkoutOf(manage.links!.plan!);
        expect(checkout).toMatchObject({ mode: "subscription", plan: "team", seats: 3 });
        if (fake) {
          expect(checkout.adjustable).toEqual({ enabled: "true", minimum: "1", maximum: "1000" });
          await fake.completeCheckout(manage.links!.plan!.split("/").pop()!, { quantity: 4 });
        } else {
          const path = new URL(manage.links!.plan!);
          const page = await (await browser.get(path.pathname + path.search)).text();
          expect(page).toContain('name="seats"');
          expect(page).toContain('value="3"');
          const saved = await browser.post("/dashboard/billing/checkout", {
            csrf: csrfOf(page),
            card: "4242 4242 4242 4242",
            plan: "team",
            seats: "4",
          });
          expect(saved.status).toBe(303);
        }
        const text = textOf(await o.callTool({ name: "billing", arguments: {} }));
        expect(text).toStartWith(
          "Plan Team (active), card on file. 4 seats paid, 3 used (members and open invitations).",
        );
      });

      test("item 1: on Team a refusal names seats and the link; billing {seats} changes the subscription's quantity", async () => {
        await eventually(async () => ((await invite(1)).isError ? undefined : true), "the fourth seat to be usable");
        const refusal = textOf(await invite(1));
        expect(refusal).toContain("The Team plan pays for 4 seats and this organization has 4 people");
        expect(refusal).toContain(`The user adds seats at ${hatch.baseUrl}/dashboard/billing?seats=5`);
        expect(refusal).not.toMatch(/upgrade/i);

        const asked = await o.callTool({ name: "billing", arguments: { seats: 6 } });
        const link = (asked.structuredContent as Billing).url!;
        expect(textOf(asked)).toContain(
          `To pay for 6 seats (now 4), the user confirms at ${link}; nothing changes until then.`,
        );
        if (fake) {
          const sub = [...fake.subscriptions.values()].find((x) => x.status === "active")!;
          const item = (sub.items as { data: { id: string; quantity: number }[] }).data[0]!;
          const flow = [...fake.portalSessions.values()].find((p) => p.url === link)!.flow;
          expect(flow).toEqual({ subscription: sub.id, items: [{ id: item.id, quantity: 6 }] });
          await fake.completePortalFlow(link);
          expect(item.quantity).toBe(6);
        } else {
          expect(link).toBe(`${hatch.baseUrl}/dashboard/billing/portal?seats=6`);
          const page = await (await browser.get("/dashboard/billing/portal?seats=6")).text();
          expect(page).toContain('value="6"');
          const done = await browser.post("/dashboard/billing/portal", {
            csrf: csrfOf(page),
            action: "seats",
            seats: "6",
          });
          expect(await done.text()).toContain("You pay for 6 seats now.");
        }
        expect(textOf(await o.callTool({ name: "billing", arguments: {} }))).toContain("6 seats paid, 4 used");
        await eventually(async () => ((await invite(1)).isError ? undefined : true), "the fifth seat to be usable");
      });
    });
  }
}
