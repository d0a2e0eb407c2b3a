import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { callRpc } from "@hatch/platform";
import {
  ChargeResultSchema,
  deriveKey,
  EntitlementsSchema,
  LocalActResultSchema,
  PLAN_TABLE,
  rpcMethods,
  signContext,
  type CallContextClaims,
  type ClientKind,
} from "@hatch/contracts";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { eq } from "drizzle-orm";
import { charges } from "../services/billing/src/db/schema.ts";
import { startTestHatch, TEST_SECRET, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { refused } from "./support/orgs.ts";
import { MODES } from "./support/servers.ts";

type User = Awaited<ReturnType<typeof userWithToken>>;
type Billing = {
  plan: string;
  state: string;
  cardOnFile: boolean;
  usage: { opens: number; amountSoFar: { amountMinor: number } };
  actionNeeded: string | null;
  url: string | null;
};

for (const mode of MODES) {
  describe(`billing (${mode})`, () => {
    let hatch: TestHatch;
    let solo: User, boss: User, payer: User, member: User, gpt: User;
    let soloC: Client, bossC: Client, payerC: Client, memberC: Client, gptC: Client;
    const ctxKey = deriveKey(TEST_SECRET, "ctx");

    beforeAll(async () => {
      hatch = await startTestHatch(mode, { serviceEnv: { BILLING_ENFORCE_LIMITS: "true" } });
      [solo, boss, payer, member, gpt] = (await Promise.all(
        ["Sol", "Bo", "Pay", "Mia", "Gus"].map((name) => userWithToken(hatch, { name })),
      )) as [User, User, User, User, User];
      [soloC, bossC, payerC, memberC] = (await Promise.all(
        [solo, boss, payer, member].map((u) => connectClient(hatch, u.accessToken)),
      )) as [Client, Client, Client, Client];
      gptC = await connectClient(hatch, gpt.accessToken, { name: "ChatGPT", version: "1.0" });
      await callOk(bossC, "org_setup", { action: "create", name: `Billing ${mode}` });
      for (const [client, user, permissions] of [
        [payerC, payer, ["billing"]],
        [memberC, member, []],
      ] as const) {
        await callOk(bossC, "org_invite", { emails: [user.email], role: "member", permissions });
        const mine = await callOk<{ invitationsForMe: { invitationId: string }[] }>(client, "org");
        await callOk(client, "org_setup", { action: "accept", invitationId: mine.invitationsForMe[0]!.invitationId });
      }
    }, 60_000);
    afterAll(async () => {
      await Promise.all([soloC, bossC, payerC, memberC, gptC].map((c) => c?.close()));
      await hatch?.stop();
    });

    /** A ctx as the gateway signs it, for the rpc methods other services and the pages call. */
    async function ctxOf(user: User, kind: ClientKind = "other", scope: "read" | "write" = "write") {
      const claims: CallContextClaims = {
        sub: user.id,
        email: user.email,
        name: user.name,
        permissions: [],
        scope,
        client: { kind, name: "test", elicitation: { form: false, url: false } },
        grant: "test",
        rid: "test",
      };
      const s = await hatch.gateway.accounts.resolve(claims, { requestId: "test", traceparent: "" });
      return {
        ctx: signContext(
          {
            ...claims,
            account: s.account,
            accountKind: s.accountKind,
            org: s.org,
            role: s.role,
            permissions: s.permissions,
          },
          ctxKey,
        ),
        account: s.account,
      };
    }
    const charge = async (user: User, input: Record<string, unknown>, kind: ClientKind = "other") => {
      const { ctx, account } = await ctxOf(user, kind);
      return callRpc(
        hatch.bus,
        "billing",
        rpcMethods.billing.charge,
        { accountId: account, currency: "USD", description: "Domain example.com", ...input },
        ChargeResultSchema,
        { ctx },
      );
    };
    const addTestCard = async (user: User, plan: "free" | "pro" = "free") => {
      const { ctx } = await ctxOf(user);
      return callRpc(
        hatch.bus,
        "billing",
        rpcMethods.billing.localAct,
        { action: "checkout", card: "ok", plan },
        LocalActResultSchema,
        { ctx },
      );
    };
    const entitlements = async (user: User) => {
      const { account } = await ctxOf(user);
      return callRpc(
        hatch.bus,
        "billing",
        rpcMethods.billing.entitlements,
        { accountId: account },
        EntitlementsSchema,
        {},
      );
    };

    test("a new personal account is on free, active, no card, zero usage; the AI gets the local checkout to add one", async () => {
      const result = await soloC.callTool({ name: "billing", arguments: {} });
      const data = result.structuredContent as Billing;
      expect(data).toMatchObject({ plan: "free", state: "active", cardOnFile: false, actionNeeded: "add a card" });
      expect(data.usage.opens).toBe(0);
      expect(data.usage.amountSoFar.amountMinor).toBe(0);
      expect(data.url).toBe(`${hatch.baseUrl}/dashboard/billing/checkout?mode=setup`);
      expect(textOf(result)).toContain(data.url!);
    });

    test("manage on free offers the Pro checkout; a company's owner gets Team", async () => {
      // Issue 26 item 3: the plan has its own link; `url` is the card the person must add first.
      type Managed = Billing & { links: { plan: string } };
      expect((await callOk<Managed>(soloC, "billing", { manage: true })).links.plan).toBe(
        `${hatch.baseUrl}/dashboard/billing/checkout?mode=subscription&plan=pro`,
      );
      expect((await callOk<Managed>(bossC, "billing", { manage: true })).links.plan).toContain("plan=team");
    });

    test("company billing: a member with the billing permission sees it; a plain member is refused", async () => {
      expect((await callOk<Billing>(payerC, "billing")).plan).toBe("free");
      expect(await refused(memberC, "billing")).toContain("billing permission");
    });

    test("bad input is refused", async () => {
      expect(await refused(soloC, "billing", { manage: "yes" })).toContain("invalid_input");
      expect(await refused(soloC, "billing", { extra: 1 })).toContain("invalid_input");
    });

    test("ChatGPT gets the settings page and no provider URL anywhere in the result", async () => {
      for (const args of [{}, { manage: true }]) {
        const result = await gptC.callTool({ name: "billing", arguments: args });
        const data = result.structuredContent as Billing;
        expect(data.url).toBe(`${hatch.baseUrl}/dashboard/billing`);
        const all = JSON.stringify(result);
        expect(all).not.toContain("/dashboard/billing/checkout");
        expect(all).not.toContain("/dashboard/billing/portal");
      }
      const refusedCharge = await charge(gpt, { amountMinor: 1200, idempotencyKey: `gpt-charge-${mode}` }, "chatgpt");
      expect(refusedCharge.url).toBe(`${hatch.baseUrl}/dashboard/billing`);
    });

    test("charge: refused without a card (with the link), charged with one, once per key; a reused key with another amount is refused", async () => {
      const key = `domain-${mode}-1`;
      const first = await charge(solo, { amountMinor: 1500, idempotencyKey: key });
      expect(first).toMatchObject({ status: "refused", chargeId: null });
      expect(first.url).toContain("/dashboard/billing/checkout");
      expect((await addTestCard(solo)).ok).toBe(true);
      const second = await charge(solo, { amountMinor: 1500, idempotencyKey: key });
      expect(second.status).toBe("charged");
      const third = await charge(solo, { amountMinor: 1500, idempotencyKey: key });
      expect(third).toEqual(second);
      expect((await callOk<Billing>(soloC, "billing")).usage.amountSoFar.amountMinor).toBe(1500);
      await expect(charge(solo, { amountMinor: 1600, idempotencyKey: key })).rejects.toThrow(/another charge/);
      await expect(charge(boss, { amountMinor: 1500, idempotencyKey: key })).rejects.toThrow(/another charge/);
    });

    test("charge: one left pending (its call died) answers 'still being made' at first, and is resumed once stale", async () => {
      const key = `crashed-${mode}-1`;
      const { account } = await ctxOf(solo);
      const db = hatch.databases.get("billing")!;
      const fields = {
        accountId: account,
        amountMinor: 900,
        currency: "USD",
        description: "Domain crashed.example",
        status: "pending" as const,
      };
      await db.insert(charges).values({ idempotencyKey: key, ...fields });
      expect(
        await charge(solo, { amountMinor: 900, idempotencyKey: key, description: fields.description }),
      ).toMatchObject({ status: "failed", message: expect.stringContaining("still being made") });
      await db
        .update(charges)
        .set({ updatedAt: new Date(Date.now() - 5 * 60_000) })
        .where(eq(charges.idempotencyKey, key));
      const resumed = await charge(solo, { amountMinor: 900, idempotencyKey: key, description: fields.description });
      expect(resumed.status).toBe("charged");
      const [row] = await db.select().from(charges).where(eq(charges.idempotencyKey, key));
      expect(row).toMatchObject({ status: "charged", attempts: 1 });
    });

    test("charge: bad input and a ctx of another account are refused", async () => {
      await expect(charge(solo, { amountMinor: 10, idempotencyKey: `tiny-${mode}-1` })).rejects.toThrow();
      await expect(charge(solo, { amountMinor: 100, idempotencyKey: "short" })).rejects.toThrow();
      const { ctx } = await ctxOf(solo);
      const { account } = await ctxOf(boss);
      await expect(
        callRpc(
          hatch.bus,
          "billing",
          rpcMethods.billing.charge,
          {
            accountId: account,
            amountMinor: 100,
            currency: "USD",
            description: "x",
            idempotencyKey: `other-${mode}-1`,
          },
          ChargeResultSchema,
          { ctx },
        ),
      ).rejects.toThrow(/forbidden|context/);
    });

    test("entitlements: free limits by default; pro limits after the local checkout to Pro", async () => {
      const before = await entitlements(payer);
      expect(before.plan).toBe("free");
      expect(before.limits).toEqual(PLAN_TABLE.free.limits);
      expect(before.settingsUrl).toBe(`${hatch.baseUrl}/dashboard/billing`);
      await addTestCard(gpt, "pro");
      const after = await entitlements(gpt);
      expect(after).toMatchObject({ plan: "pro", state: "active" });
      expect(after.limits).toEqual(PLAN_TABLE.pro.limits);
      const shown = await callOk<Billing>(gptC, "billing");
      expect(shown).toMatchObject({ plan: "pro", cardOnFile: true, actionNeeded: null, url: null });
      expect(shown.usage.amountSoFar.amountMinor).toBe(PLAN_TABLE.pro.monthlyCents!);
    });

    test("local.act: a declined card changes nothing; a read-only session cannot act", async () => {
      const { ctx } = await ctxOf(member);
      await expect(
        callRpc(
          hatch.bus,
          "billing",
          rpcMethods.billing.localAct,
          { action: "checkout", card: "ok", plan: "team" },
          LocalActResultSchema,
          { ctx },
        ),
      ).rejects.toThrow(/billing permission/);
      const { ctx: payerCtx } = await ctxOf(payer);
      const declined = await callRpc(
        hatch.bus,
        "billing",
        rpcMethods.billing.localAct,
        { action: "checkout", card: "declined", plan: "team" },
        LocalActResultSchema,
        { ctx: payerCtx },
      );
      expect(declined.ok).toBe(false);
      expect((await entitlements(payer)).plan).toBe("free");
      const { ctx: readOnly } = await ctxOf(payer, "other", "read");
      await expect(
        callRpc(hatch.bus, "billing", rpcMethods.billing.localAct, { action: "remove_card" }, LocalActResultSchema, {
          ctx: readOnly,
        }),
      ).rejects.toThrow();
    });
  });
}
