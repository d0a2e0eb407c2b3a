import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  AppLookupInputSchema,
  CallReplySchema,
  deriveKey,
  HostResolvedSchema,
  LocalActResultSchema,
  rpcMethods,
  signContext,
  subjects,
  ToolError,
  type CallContextClaims,
  type CallReply,
} from "@hatch/contracts";
import {
  bindRpc,
  callRpc,
  createLogger,
  decodeJson,
  encodeJson,
  startService,
  type RunningService,
} from "@hatch/platform";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { and, asc, eq, isNull, like } from "drizzle-orm";
import { Browser } from "../gateway/test/oauth-harness.ts";
import { csrfOf } from "../gateway/test/support.ts";
import { charges, usage } from "../services/billing/src/db/schema.ts";
import {
  boughtDomains,
  hostnames,
  jobs,
  outbox,
  simulatedOffers,
  simulatedRegistrations,
} from "../services/domains/src/db/schema.ts";
import { addTestCard } from "./support/call-context.ts";
import { eventually } from "./support/eventually.ts";
import { startTestHatch, TEST_SECRET, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, connectFormClient, textOf, userWithToken } from "./support/mcp.ts";
import { refused } from "./support/orgs.ts";
import { ADA_REGISTRANT } from "./support/registrant.ts";
import { MODES } from "./support/servers.ts";

// Finding and buying a domain through the tools, on the simulated registrar (stages a few tens of milliseconds apart),
// the real billing service (local provider: a card is added as its checkout page would) and the real gateway: a client
// that shows forms, a client that gets the confirm link (followed over real HTTP), and calls straight on the bus to
// replay one confirmation.

type User = Awaited<ReturnType<typeof userWithToken>>;
type Status = {
  domains: {
    domain: string;
    stage: string;
    renewsAt: string | null;
    autoRenew: boolean;
    renewalPrice: { amountMinor: number } | null;
    address: string | null;
    problem: string | null;
  }[];
};
const PASSWORD = "correct horse battery";
const OWNER = ADA_REGISTRANT;
const FORM_ANSWER = { agree: true, ...OWNER };
const PAGE_FIELDS = Object.fromEntries(Object.entries(FORM_ANSWER).map(([k, v]) => [`f.${k}`, String(v)]));

/** find_domain's structured content. */
type Found = {
  available: Record<string, { premium?: true; firstYearPrice: string | null; renewalPrice: string | null }>;
  unavailable: string[];
};

for (const mode of MODES) {
  describe(`buying a domain (${mode})`, () => {
    let hatch: TestHatch;
    let apps: RunningService;
    let ada: User, bob: User, boss: User, member: User, buyer: User;
    let adaC: Client, bobC: Client, bossC: Client, memberC: Client, buyerC: Client;
    const ctxKey = deriveKey(TEST_SECRET, "ctx");
    const tag = mode === "real" ? "r" : "e";
    const name = (label: string, tld = "com") => `free-${label}-${tag}.${tld}`;

    beforeAll(async () => {
      hatch = await startTestHatch(mode, {
        services: ["orgs", "billing", "domains"],
        serviceEnv: { SIMULATED_REGISTRAR_STEP_MS: "40", DOMAINS_JOB_POLL_MS: "20" },
      });
      [ada, bob, boss, member, buyer] = (await Promise.all(
        ["Ada", "Bob", "Boss", "Mia", "Bea"].map((n) => userWithToken(hatch, { name: n })),
      )) as [User, User, User, User, User];
      // A stand-in for the apps service's `app.lookup`: Ada may manage the app "ada-site", nobody else any app.
      apps = await startService({
        name: "apps",
        version: "test",
        bus: hatch.bus,
        contextKey: ctxKey,
        contracts: [],
        tools: [],
        logger: createLogger({ level: "silent" }),
        rpc: {
          [rpcMethods.apps.appLookup]: bindRpc(AppLookupInputSchema, async ({ ctx, input }) => {
            if (ctx?.sub !== ada.id || input.address !== "ada-site")
              throw new ToolError("not_found", `There is no app at ${input.address} that you may manage.`);
            return {
              appId: "app_ada_site",
              address: "ada-site",
              name: "Ada's site",
              accountId: ctx.account!,
              ownerId: ada.id,
              url: "http://ada-site.localhost",
            };
          }),
        },
      });
      [adaC, bobC, bossC, memberC, buyerC] = (await Promise.all(
        [ada, bob, boss, member, buyer].map((u) => connectClient(hatch, u.accessToken)),
      )) as [Client, Client, Client, Client, Client];
      await callOk(bossC, "org_setup", { action: "create", name: `Domains ${mode}` });
      for (const [client, user, permissions] of [
        [memberC, member, []],
        [buyerC, buyer, ["buy_domains"]],
      ] as const) {
        await callOk(bossC, "org_invite", { emails: [user.email], role: "member", permissions });
        const mine = await callOk<{ invitationsForMe: { invitationId: string }[] }>(client, "org");
        await callOk(client, "org_setup", { action: "accept", invitationId: mine.invitationsForMe[0]!.invitationId });
      }
    }, 60_000);
    afterAll(async () => {
      await Promise.all([adaC, bobC, bossC, memberC, buyerC].map((c) => c?.close()));
      await apps?.stop();
      await hatch?.stop();
    });

    const domainsDb = () => hatch.databases.get("domains")!;
    const billingDb = () => hatch.databases.get("billing")!;

    async function claimsOf(user: User): Promise<CallContextClaims> {
      const base: CallContextClaims = {
        sub: user.id,
        email: user.email,
        name: user.name,
        permissions: [],
        scope: "write",
        client: { kind: "claude", name: "claude-code", elicitation: { form: false, url: false } },
        grant: user.grantId,
        rid: "test",
      };
      const s = await hatch.gateway.accounts.resolve(base, { requestId: "test", traceparent: "" });
      return {
        ...base,
        account: s.account,
        accountKind: s.accountKind,
        org: s.org,
        role: s.role,
        permissions: s.permissions,
      };
    }
    async function addCard(user: User) {
      await addTestCard(hatch.bus, signContext(await claimsOf(user), ctxKey));
    }
    async function removeCard(user: User) {
      const ctx = signContext(await claimsOf(user), ctxKey);
      const removed = await callRpc(
        hatch.bus,
        "billing",
        rpcMethods.billing.localAct,
        { action: "remove_card" },
        LocalActResultSchema,
        { ctx },
      );
      expect(removed.ok).toBe(true);
    }
    /** buy_domain straight on the bus, signed as the gateway signs it (to hold and replay a confirm token). */
    async function onBus(
      user: User,
      input: Record<string, unknown>,
      body: { answer?: Record<string, unknown>; confirm?: string } = {},
    ): Promise<CallReply> {
      const ctx = signContext(await claimsOf(user), ctxKey);
      const reply = await hatch.bus.request(
        subjects.tool("domains", "buy_domain"),
        encodeJson({ ctx, input, ...body }),
        { timeoutMs: 30_000 },
      );
      return CallReplySchema.parse(decodeJson(reply.data));
    }
    function askOf(reply: CallReply) {
      if (!reply.ok || !("ask" in reply)) throw new Error(`expected a question, got ${JSON.stringify(reply)}`);
      return reply.ask;
    }
    async function liveStatus(client: Client, domain: string) {
      return eventually(async () => {
        const status = await callOk<Status>(client, "domain_status", { domain });
        return status.domains[0]?.stage === "live" ? status.domains[0] : undefined;
      }, `${domain} live`);
    }
    async function chargesFor(domainKeyPrefix: string) {
      return billingDb()
        .select()
        .from(charges)
        .where(like(charges.idempotencyKey, `${domainKeyPrefix}%`));
    }
    async function eventsOf(domain: string) {
      const rows = await domainsDb().select().from(outbox).orderBy(asc(outbox.seq));
      return rows
        .filter((r) => (r.event as { details?: { domain?: string } }).details?.domain === domain)
        .map((r) => `${(r.event as { entity: string }).entity}.${(r.event as { verb: string }).verb}`);
    }

    test("find_domain: candidates across the usual endings with both prices; premium and taken names; the full name first", async () => {
      const found = await adaC.callTool({ name: "find_domain", arguments: { query: `free-word-${tag}` } });
      // Prices as the text shows them, by domain; the names that cannot be bought apart.
      const offered = found.structuredContent as Found;
      expect(Object.keys(offered.available)).toEqual(
        ["com", "net", "org", "dev", "app", "io", "co", "xyz"].map((t) => `free-word-${tag}.${t}`),
      );
      expect(offered.unavailable).toEqual([]);
      expect(offered.available[`free-word-${tag}.com`]).toEqual({ firstYearPrice: "$12.99", renewalPrice: "$15.99" });
      expect(textOf(found)).toContain(`free-word-${tag}.com: available, $12.99 the first year, then $15.99 a year`);

      const premium = await adaC.callTool({
        name: "find_domain",
        arguments: { query: "premium-thing.io", tlds: ["io", "dev"], limit: 3 },
      });
      expect(premium.structuredContent).toEqual({
        available: {
          "premium-thing.io": { premium: true, firstYearPrice: "$999.75", renewalPrice: expect.any(String) },
          "premium-thing.dev": { premium: true, firstYearPrice: "$374.75", renewalPrice: expect.any(String) },
        },
        unavailable: [],
      });
      expect(textOf(premium)).toContain("premium-thing.io: available (premium), $999.75 the first year");
      const taken = await callOk<Found>(adaC, "find_domain", { query: "taken-name.com", limit: 1 });
      expect(taken).toEqual({ available: {}, unavailable: ["taken-name.com"] });
    }, 30_000);

    test("find_domain: bad input is refused", async () => {
      expect(await refused(adaC, "find_domain", { query: "not a domain!" })).toContain("invalid_input");
      expect(await refused(adaC, "find_domain", { query: ".." })).toContain("invalid_input");
      expect(await refused(adaC, "find_domain", { query: "acme", tlds: [".com"] })).toContain("invalid_input");
      expect(await refused(adaC, "find_domain", { query: "acme", limit: 0 })).toContain("invalid_input");
    }, 30_000);

    test("buy_domain: invalid names, IP addresses, names that cannot be bought", async () => {
      for (const domain of ["..", "1.2.3.4", "https://acme.com", "acme", "-acme.com", "a..com"]) {
        expect(await refused(adaC, "buy_domain", { domain })).toContain("invalid_input");
      }
      expect(await refused(adaC, "buy_domain", { domain: "taken-thing.com" })).toMatch(
        /not available to buy.*find_domain.*\(conflict\)/s,
      );
      expect(await refused(adaC, "buy_domain", { domain: "free-thing.zzz" })).toContain("(conflict)");
      expect(await refused(adaC, "buy_domain", { domain: "free.sub.example.com" })).toContain("(conflict)");
      expect(await refused(adaC, "domain_status", { domain: "free-never.com" })).toContain("(not_found)");
    }, 30_000);

    test("a form-eliciting client: refused without a card (with the link to add one), then bought and through to live", async () => {
      const domain = name("form");
      const { client, asked, schemas } = await connectFormClient(hatch, ada.accessToken, () => ({
        action: "accept",
        content: FORM_ANSWER,
      }));
      // Issue 26 item 2: the card is checked before any question: no form, the add-card link at once.
      const first = await client.callTool({ name: "buy_domain", arguments: { domain } });
      expect(asked).toEqual([]);
      const refusedData = first.structuredContent as { status: string; userAction: { kind: string; url: string } };
      expect(refusedData.status).toBe("needs_user");
      expect(refusedData.userAction.kind).toBe("open_link");
      expect(refusedData.userAction.url).toBe(`${hatch.baseUrl}/dashboard/billing/checkout?mode=setup`);
      expect(textOf(first)).toContain("No card is on file");
      expect(await domainsDb().select().from(boughtDomains).where(eq(boughtDomains.domain, domain))).toEqual([]);

      await addCard(ada);
      const bought = await client.callTool({ name: "buy_domain", arguments: { domain } });
      await client.close();
      expect(asked[0]).toContain(`Buy ${domain} for $12.99 now, renewed automatically at $15.99 a year?`);
      expect(Object.keys((schemas[0] as { properties: object }).properties)).toEqual([
        "agree",
        "name",
        "email",
        "organization",
        "address",
        "city",
        "postalCode",
        "country",
        "phone",
      ]);
      expect(bought.structuredContent).toMatchObject({
        status: "bought",
        domain,
        stage: "registering",
        firstYearPrice: { amountMinor: 1299 },
        renewalPrice: { amountMinor: 1599 },
        renewsAt: null,
      });
      expect(textOf(bought)).toContain(`Bought ${domain} for $12.99`);

      const live = await liveStatus(adaC, domain);
      expect(live).toMatchObject({
        domain,
        stage: "live",
        autoRenew: true,
        renewalPrice: { amountMinor: 1599 },
        address: null,
        problem: null,
      });
      expect(Date.parse(live.renewsAt!)).toBeGreaterThan(Date.now() + 360 * 86_400_000);
      const [row] = await domainsDb().select().from(boughtDomains).where(eq(boughtDomains.domain, domain));
      expect(row!.registrant).toEqual({ ...OWNER, country: "GB", phone: "+44.2071234567" });
      const [registration] = await domainsDb()
        .select()
        .from(simulatedRegistrations)
        .where(eq(simulatedRegistrations.domain, domain));
      expect(registration!.records).toEqual([{ type: "CNAME", host: "www", value: row!.zoneRecords![0]!.value }]);
      const paid = await billingDb().select().from(charges).where(eq(charges.idempotencyKey, row!.chargeKey));
      expect(paid.map((c) => [c.status, c.amountMinor, c.accountId])).toEqual([["charged", 1299, row!.accountId]]);
      expect(await eventsOf(domain)).toEqual(["domain.bought", "domain.registered", "domain.live"]);
      const [bought1] = (await domainsDb().select().from(outbox)).filter(
        (r) =>
          (r.event as { verb: string; details: { domain?: string } }).verb === "bought" &&
          (r.event as { details: { domain?: string } }).details.domain === domain,
      );
      expect((bought1!.event as { details: object; account: string }).details).toEqual({
        domain,
        amountMinor: 1299,
        currency: "USD",
      });
      expect((bought1!.event as { account: string }).account).toBe(row!.accountId);
      // Its renewal is queued 30 days before it expires.
      const [renew] = await domainsDb()
        .select()
        .from(jobs)
        .where(and(eq(jobs.kind, "domain.renew"), eq(jobs.key, domain)));
      expect(renew!.runAt.getTime()).toBeGreaterThan(Date.now() + 300 * 86_400_000);
      // Another account does not see it.
      expect((await callOk<Status>(bobC, "domain_status")).domains).toEqual([]);
      expect(await refused(bobC, "domain_status", { domain })).toContain("(not_found)");
      // Bought: no longer offered, and buying it again answers what it is.
      expect((await callOk<Found>(bobC, "find_domain", { query: domain, limit: 1 })).unavailable).toEqual([domain]);
      expect(await refused(bobC, "buy_domain", { domain })).toContain("(conflict)");
    }, 30_000);

    test("the confirm link: refused without a card on the page, then confirmed in a browser and through to live", async () => {
      const domain = name("link", "dev");
      const linkFor = async () => {
        const result = await bobC.callTool({ name: "buy_domain", arguments: { domain } });
        const action = (result.structuredContent as { status: string; userAction: { kind: string; url: string } })
          .userAction;
        expect(result.structuredContent).toMatchObject({
          status: "needs_user",
          domain,
          stage: null,
          firstYearPrice: { amountMinor: 1499 },
          renewalPrice: { amountMinor: 1699 },
        });
        expect(action.kind).toBe("open_link");
        return new URL(action.url).pathname;
      };
      const browser = new Browser((p, init) => fetch(`${hatch.baseUrl}${p}`, { ...init, redirect: "manual" }));
      expect((await browser.signIn(bob.email, PASSWORD)).status).toBe(303);
      const confirmOn = async (path: string) => {
        const page = await (await browser.get(path)).text();
        expect(page).toContain(`Buy ${domain} for $14.99 now`);
        expect(page).toContain('name="f.phone"');
        const response = await browser.post(path, { csrf: csrfOf(page), action: "confirm", ...PAGE_FIELDS });
        return { status: response.status, text: await response.text() };
      };

      // Issue 26 item 2: without a card the first answer is the add-card link, not a confirm page.
      expect(await linkFor()).toBe("/dashboard/billing/checkout");
      await addCard(bob);
      // A card removed after the question was asked: the page says so, nothing is bought.
      const asked = await linkFor();
      await removeCard(bob);
      const noCard = await confirmOn(asked);
      expect(noCard.text).toContain("No card is on file");
      expect(noCard.text).toContain("/dashboard/billing/checkout");
      expect(await domainsDb().select().from(boughtDomains).where(eq(boughtDomains.domain, domain))).toEqual([]);

      await addCard(bob);
      const done = await confirmOn(await linkFor());
      expect(done.status).toBe(200);
      expect(done.text).toContain(`Bought ${domain} for $14.99`);
      expect((await liveStatus(bobC, domain)).problem).toBeNull();
    }, 30_000);

    test("one confirmation never charges twice: replayed after, and twice at once", async () => {
      const domain = name("replay");
      await addCard(ada);
      const question = askOf(await onBus(ada, { domain }));
      const replies = await Promise.all([
        onBus(ada, { domain }, { answer: FORM_ANSWER, confirm: question.confirm }),
        onBus(ada, { domain }, { answer: FORM_ANSWER, confirm: question.confirm }),
      ]);
      // One of two answers at once buys; the other buys too (same charge key) or is told the charge is still being made.
      expect(replies.some((r) => r.ok && "result" in r && r.result.data.status === "bought")).toBe(true);
      for (const reply of replies) {
        if (!reply.ok)
          expect(reply.error).toEqual({
            code: "unavailable",
            message: "This charge is still being made; ask again in a moment. Nothing was bought.",
          });
        else expect(reply).toMatchObject({ ok: true, result: { data: { status: "bought", domain } } });
      }
      const later = await onBus(ada, { domain }, { answer: FORM_ANSWER, confirm: question.confirm });
      expect(later).toMatchObject({ ok: true, result: { data: { status: "bought", domain } } });
      if (later.ok && "result" in later) expect(later.result.text).toContain("nothing was charged again");
      const [row] = await domainsDb().select().from(boughtDomains).where(eq(boughtDomains.domain, domain));
      expect((await chargesFor(row!.chargeKey)).map((c) => [c.status, c.attempts])).toEqual([["charged", 1]]);
      expect((await eventsOf(domain)).filter((e) => e === "domain.bought")).toHaveLength(1);
      await liveStatus(adaC, domain);
    }, 30_000);

    test("a price that changed since the confirmation asks again, and buys at the price confirmed then", async () => {
      const domain = name("reprice");
      await addCard(ada);
      const question = askOf(await onBus(ada, { domain }));
      expect(question.message).toContain("$12.99");
      await domainsDb()
        .insert(simulatedOffers)
        .values({ domain, available: true, premium: false, firstYearMinor: 1899, renewalMinor: 2099 });
      const again = askOf(await onBus(ada, { domain }, { answer: FORM_ANSWER, confirm: question.confirm }));
      expect(again.message).toContain("The price changed since you confirmed (it was $12.99)");
      expect(again.message).toContain(`Buy ${domain} for $18.99 now, renewed automatically at $20.99 a year?`);
      expect(again.data).toMatchObject({ firstYearPrice: { amountMinor: 1899 }, renewalPrice: { amountMinor: 2099 } });
      expect(await domainsDb().select().from(boughtDomains).where(eq(boughtDomains.domain, domain))).toEqual([]);
      const bought = await onBus(ada, { domain }, { answer: FORM_ANSWER, confirm: again.confirm });
      expect(bought).toMatchObject({
        ok: true,
        result: { data: { status: "bought", firstYearPrice: { amountMinor: 1899 } } },
      });
      const [row] = await domainsDb().select().from(boughtDomains).where(eq(boughtDomains.domain, domain));
      expect((await chargesFor(row!.chargeKey)).map((c) => c.amountMinor)).toEqual([1899]);
    }, 30_000);

    test("the user not agreeing, or incomplete owner details, buys and charges nothing", async () => {
      const domain = name("declined");
      await addCard(ada);
      const question = askOf(await onBus(ada, { domain }));
      const declined = await onBus(
        ada,
        { domain },
        { answer: { ...FORM_ANSWER, agree: false }, confirm: question.confirm },
      );
      expect(declined).toMatchObject({ ok: true, result: { data: { status: "needs_user", domain } } });
      const bad = await onBus(
        ada,
        { domain },
        { answer: { ...FORM_ANSWER, country: "Britain", phone: "12345" }, confirm: question.confirm },
      );
      expect(bad).toMatchObject({ ok: false, error: { code: "invalid_input" } });
      if (!bad.ok) expect(bad.error.message).toMatch(/country: .*two-letter.*phone: .*international/);
      expect(await domainsDb().select().from(boughtDomains).where(eq(boughtDomains.domain, domain))).toEqual([]);
      expect(await chargesFor(`domain:`).then((rows) => rows.filter((r) => r.description.includes(domain)))).toEqual(
        [],
      );
    }, 30_000);

    test("a registration that fails for good is refunded, and says so", async () => {
      const domain = `fail-refund-${tag}.com`;
      await addCard(ada);
      const question = askOf(await onBus(ada, { domain }));
      expect(await onBus(ada, { domain }, { answer: FORM_ANSWER, confirm: question.confirm })).toMatchObject({
        ok: true,
        result: { data: { status: "bought" } },
      });
      const status = await eventually(async () => {
        const s = await callOk<Status>(adaC, "domain_status", { domain });
        return s.domains[0]?.problem?.includes("was refunded") ? s.domains[0] : undefined;
      }, "the refund");
      expect(status.problem).toBe(
        `Registering ${domain} failed (the registry refused it); the $12.99 charge was refunded.`,
      );
      expect(status.stage).toBe("registering");
      const [row] = await domainsDb().select().from(boughtDomains).where(eq(boughtDomains.domain, domain));
      expect(row!.chargeStatus).toBe("refunded");
      expect((await chargesFor(row!.chargeKey)).map((c) => c.status)).toEqual(["refunded"]);
      expect(await eventsOf(domain)).toEqual(["domain.bought", "domain.registration_failed", "domain.refunded"]);
      // Billing's usage counts only the domains still paid for: the refunded one came off again.
      const paid = (
        await domainsDb().select().from(boughtDomains).where(eq(boughtDomains.accountId, row!.accountId))
      ).filter((r) => r.chargeStatus === "charged").length;
      await eventually(async () => {
        const month = `${new Date().toISOString().slice(0, 7)}-01`;
        const [counted] = await billingDb()
          .select()
          .from(usage)
          .where(and(eq(usage.accountId, row!.accountId), eq(usage.month, month)));
        return counted?.domains === paid;
      }, `billing usage to count ${paid} domains`);
      // A second refund of the same charge gives nothing back twice.
      const ctx = signContext(await claimsOf(ada), ctxKey);
      const { RefundResultSchema } = await import("@hatch/contracts");
      expect(
        await callRpc(
          hatch.bus,
          "billing",
          rpcMethods.billing.refund,
          { accountId: row!.accountId, idempotencyKey: row!.chargeKey, reason: "again" },
          RefundResultSchema,
          { ctx },
        ),
      ).toEqual({ status: "refunded" });
      expect(
        await callRpc(
          hatch.bus,
          "billing",
          rpcMethods.billing.refund,
          { accountId: row!.accountId, idempotencyKey: "domain:never-charged", reason: "x" },
          RefundResultSchema,
          { ctx },
        ),
      ).toEqual({ status: "not_charged" });
      const bobCtx = signContext(await claimsOf(bob), ctxKey);
      await expect(
        callRpc(
          hatch.bus,
          "billing",
          rpcMethods.billing.refund,
          { accountId: row!.accountId, idempotencyKey: row!.chargeKey, reason: "x" },
          RefundResultSchema,
          { ctx: bobCtx },
        ),
      ).rejects.toThrow(/forbidden|context/);
    }, 30_000);

    test("permissions: a member without buy_domains is refused; one with it buys on the company's bill", async () => {
      const domain = name("company", "org");
      const text = await refused(memberC, "buy_domain", { domain });
      expect(text).toContain("buy_domains permission");
      expect(text).toContain("(forbidden)");
      await addCard(boss);
      const question = askOf(await onBus(buyer, { domain }));
      expect(await onBus(buyer, { domain }, { answer: FORM_ANSWER, confirm: question.confirm })).toMatchObject({
        ok: true,
        result: { data: { status: "bought" } },
      });
      const company = (await claimsOf(buyer)).account!;
      const [row] = await domainsDb().select().from(boughtDomains).where(eq(boughtDomains.domain, domain));
      expect(row!.accountId).toBe(company);
      // Every member of the company sees the company's domains.
      expect((await callOk<Status>(memberC, "domain_status")).domains.map((d) => d.domain)).toContain(domain);
    }, 30_000);

    test("renewal: when due, charged once for the period, renewed for a year, and queued for the next one", async () => {
      const domain = name("renew");
      await addCard(ada);
      const question = askOf(await onBus(ada, { domain }));
      expect(await onBus(ada, { domain }, { answer: FORM_ANSWER, confirm: question.confirm })).toMatchObject({
        ok: true,
        result: { data: { status: "bought" } },
      });
      const before = Date.parse((await liveStatus(adaC, domain)).renewsAt!);
      // Due now rather than in eleven months.
      await domainsDb()
        .update(jobs)
        .set({ runAt: new Date() })
        .where(and(eq(jobs.kind, "domain.renew"), eq(jobs.key, domain)));
      (hatch.services.get("domains") as unknown as { context: { jobs: { wake(): void } } }).context.jobs.wake();
      const renewed = await eventually(async () => {
        const s = await callOk<Status>(adaC, "domain_status", { domain });
        return Date.parse(s.domains[0]!.renewsAt!) > before ? s.domains[0] : undefined;
      }, "the renewal");
      expect(Date.parse(renewed.renewsAt!) - before).toBe(365 * 86_400_000);
      const renewals = await chargesFor("renew:");
      expect(
        renewals.filter((c) => c.description === `Domain ${domain}, renewal`).map((c) => [c.status, c.amountMinor]),
      ).toEqual([["charged", 1599]]);
      expect((await eventsOf(domain)).filter((e) => e === "domain.renewed")).toHaveLength(1);
      const [next] = await domainsDb()
        .select()
        .from(jobs)
        .where(and(eq(jobs.kind, "domain.renew"), eq(jobs.key, domain), isNull(jobs.doneAt)));
      expect(next!.runAt.getTime()).toBeGreaterThan(before);
    }, 30_000);

    test("a purchase that names an app: the app must be one the buyer manages; live, the hostname serves it", async () => {
      await addCard(ada);
      expect(await refused(bobC, "buy_domain", { domain: name("bobsite"), address: "ada-site" })).toContain(
        "(not_found)",
      );
      const domain = name("site");
      const question = askOf(await onBus(ada, { domain, address: "ada-site" }));
      expect(
        await onBus(ada, { domain, address: "ada-site" }, { answer: FORM_ANSWER, confirm: question.confirm }),
      ).toMatchObject({ ok: true, result: { data: { status: "bought" } } });
      expect((await liveStatus(adaC, domain)).address).toBe("ada-site");
      const [host] = await domainsDb().select().from(hostnames).where(eq(hostnames.hostname, domain));
      expect(host).toMatchObject({ kind: "bought", address: "ada-site", appId: "app_ada_site", stage: "live" });
      expect(host!.verifiedAt).not.toBeNull();
      expect(
        await callRpc(
          hatch.bus,
          "domains",
          rpcMethods.domains.resolveHost,
          { hostname: domain },
          HostResolvedSchema,
          {},
        ),
      ).toEqual({ address: "ada-site", accountId: host!.accountId });
    }, 30_000);
  });
}
