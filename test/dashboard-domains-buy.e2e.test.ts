import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { eq } from "drizzle-orm";
import { boughtDomains, hostnames } from "../services/domains/src/db/schema.ts";
import type { DomainsService } from "../services/domains/src/service.ts";
import { csrfOf, HostCookieJar, signInWithForm } from "./support/cookies.ts";
import { eventually } from "./support/eventually.ts";
import { joinOrg } from "./support/orgs.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { ADA_REGISTRANT } from "./support/registrant.ts";
import { MODES } from "./support/servers.ts";

// Finding and buying a domain, and the organization's address for apps, on /dashboard/domains over real HTTP like a
// browser without JavaScript (the simulated registrar and the local payment provider). Without a card the purchase
// stops at billing's add-card link, nothing bought; with one, the price and the owner's details are confirmed on the
// confirm step (buy_domain's own question), and the purchase lands in the list and the activity log ("on the
// dashboard"). Only the owner and admins set up or remove the organization's address; a manager and a member see it
// and are refused; a member without the buy permission is refused the purchase; another person sees none of it.

const PASSWORD = "correct horse battery";
const PAGE_FIELDS = Object.fromEntries(
  Object.entries({ agree: true, ...ADA_REGISTRANT }).map(([k, v]) => [`f.${k}`, String(v)]),
);
/** The tool names a page must never show (the words are for people). */
const TOOL_WORDS = /\b(find_domain|buy_domain|company_domain_set|company_domain|org_member_update|org_setup)\b/;
/** What a person reads on a page: its text without markup (a form's hidden fields are not read), entities decoded. */
const words = (body: string) =>
  body
    .replace(/<(style|script)[^>]*>[\s\S]*?<\/\1>/g, "")
    .replace(/<[^>]*>/g, " ")
    .replaceAll("&#39;", "'")
    .replaceAll("&quot;", '"')
    .replaceAll("&amp;", "&");

for (const mode of MODES) {
  describe(`dashboard: buy a domain and the organization's address (${mode})`, () => {
    let hatch: TestHatch;
    let domains: DomainsService;
    let owner: Awaited<ReturnType<typeof userWithToken>>;
    let manager: Awaited<ReturnType<typeof userWithToken>>;
    let member: Awaited<ReturnType<typeof userWithToken>>;
    let stranger: Awaited<ReturnType<typeof userWithToken>>;
    let ownerAi: Client;
    const clients: Client[] = [];
    const tag = `${mode === "real" ? "r" : "e"}${process.pid}`;
    const wanted = `free-shop-${tag}.com`;
    const company = `apps.buyco-${tag}.test`;

    beforeAll(async () => {
      hatch = await startTestHatch(mode, {
        serviceEnv: { SIMULATED_REGISTRAR_STEP_MS: "40", DOMAINS_JOB_POLL_MS: "20" },
      });
      domains = hatch.services.get("domains") as DomainsService;
      owner = await userWithToken(hatch, { name: "Olga", email: `buy-owner-${tag}@example.com` });
      manager = await userWithToken(hatch, { name: "Max", email: `buy-manager-${tag}@example.com` });
      member = await userWithToken(hatch, { name: "Mo", email: `buy-member-${tag}@example.com` });
      stranger = await userWithToken(hatch, { name: "Sam", email: `buy-stranger-${tag}@example.com` });
      ownerAi = await connectClient(hatch, owner.accessToken);
      const managerAi = await connectClient(hatch, manager.accessToken);
      const memberAi = await connectClient(hatch, member.accessToken);
      clients.push(ownerAi, managerAi, memberAi);
      await callOk(ownerAi, "org_setup", { action: "create", name: `Buy Co ${tag}` });
      await joinOrg(ownerAi, managerAi, manager.email, { role: "manager" });
      await joinOrg(ownerAi, memberAi, member.email, { role: "member" });
    }, 90_000);
    afterAll(async () => {
      await Promise.all(clients.map((c) => c.close()));
      await hatch?.stop();
    });

    async function signedIn(email: string): Promise<HostCookieJar> {
      const jar = new HostCookieJar();
      await signInWithForm(jar, `${hatch.baseUrl}/signin`, email, PASSWORD);
      return jar;
    }
    const page = async (jar: HostCookieJar, path = "/dashboard/domains") => {
      const response = await jar.fetch(`${hatch.baseUrl}${path}`);
      return { status: response.status, body: await response.text() };
    };
    const bought = () => domains.context.db.select().from(boughtDomains).where(eq(boughtDomains.domain, wanted));

    test("find shows prices; buying without a card leads to billing's add-card link and buys nothing", async () => {
      const jar = await signedIn(owner.email);
      const found = await page(jar, `/dashboard/domains?find=free-shop-${tag}`);
      expect(found.status).toBe(200);
      expect(found.body).toContain(`data-offer="${wanted}"`);
      expect(found.body).toMatch(new RegExp(`Buy ${wanted.replaceAll(".", "\\.")} for \\$\\d+\\.\\d{2}`));
      expect(words(found.body)).not.toMatch(TOOL_WORDS);
      const noCard = await jar.post(`${hatch.baseUrl}/dashboard/domains/buy`, {
        csrf: csrfOf(found.body),
        domain: wanted,
      });
      expect(noCard.status).toBe(402);
      const body = await noCard.text();
      expect(body).toContain(`A card is needed before buying ${wanted}`);
      expect(body).toContain('/dashboard/billing/checkout?mode=setup">Add a card</a>');
      expect(words(body)).not.toMatch(TOOL_WORDS);
      expect(await bought()).toHaveLength(0);
    });

    test("with a card, the confirm step shows the price; confirming buys it, listed and logged as on the dashboard", async () => {
      const jar = await signedIn(owner.email);
      const checkout = await page(jar, "/dashboard/billing/checkout?mode=setup");
      expect(
        (
          await jar.post(`${hatch.baseUrl}/dashboard/billing/checkout`, {
            csrf: csrfOf(checkout.body),
            card: "4242 4242 4242 4242",
            plan: "free",
          })
        ).status,
      ).toBe(303);
      const csrf = csrfOf((await page(jar)).body);
      const ask = await jar.post(`${hatch.baseUrl}/dashboard/domains/buy`, { csrf, domain: wanted });
      expect(ask.status).toBe(200);
      const askBody = await ask.text();
      expect(askBody).toContain("Please confirm");
      expect(askBody).toMatch(new RegExp(`Buy ${wanted.replaceAll(".", "\\.")} for \\$[\\d.,]+ now, renewed`));
      expect(words(askBody)).not.toMatch(TOOL_WORDS);
      expect(await bought()).toHaveLength(0);
      const input = /name="input" value="([^"]*)"/.exec(askBody)![1]!.replaceAll("&quot;", '"');
      const confirmed = await jar.post(`${hatch.baseUrl}/dashboard/confirm`, {
        csrf,
        tool: "buy_domain",
        input,
        back: "/dashboard/domains",
        action: "confirm",
        ...PAGE_FIELDS,
      });
      expect(confirmed.status).toBe(303);
      expect(confirmed.headers.get("location")).toBe("/dashboard/domains");
      const after = await page(jar);
      expect(after.body).toMatch(new RegExp(`Bought ${wanted.replaceAll(".", "\\.")} for \\$`));
      expect(after.body).toContain(`data-bought="${wanted}"`);
      expect(words(after.body)).not.toMatch(TOOL_WORDS);
      const [row] = await bought();
      expect(row?.chargeStatus).toBe("charged");
      // The activity log's text says each entry in words, with who did it and where.
      const entry = await eventually(async () => {
        const text = textOf(await ownerAi.callTool({ name: "org_activity", arguments: {} }));
        return text.split("\n").find((line) => line.includes(`bought ${wanted}`));
      }, "the purchase in the activity log");
      expect(entry).toEndWith("(on the dashboard)");
    });

    test("a confirm step whose name is gone meanwhile goes back to the domains page and says so in words for people", async () => {
      const jar = await signedIn(owner.email);
      const csrf = csrfOf((await page(jar)).body);
      const gone = `taken-gone-${tag}.com`;
      const answer = await jar.post(`${hatch.baseUrl}/dashboard/confirm`, {
        csrf,
        tool: "buy_domain",
        input: JSON.stringify({ domain: gone }),
        back: "/dashboard/domains",
        action: "confirm",
        ...PAGE_FIELDS,
      });
      expect(answer.status).toBe(303);
      expect(answer.headers.get("location")).toBe("/dashboard/domains");
      const shown = words((await page(jar)).body);
      expect(shown).toContain(`${gone} is not available to buy.`);
      expect(shown).not.toMatch(TOOL_WORDS);
    });

    test("a member without the buy permission is refused in words for people; nothing is bought", async () => {
      const jar = await signedIn(member.email);
      const csrf = csrfOf((await page(jar)).body);
      const other = `free-other-${tag}.com`;
      const refused = await jar.post(`${hatch.baseUrl}/dashboard/domains/buy`, { csrf, domain: other });
      expect(refused.status).toBe(400);
      const body = await refused.text();
      expect(body).toContain("Buying a domain needs the");
      expect(words(body)).not.toMatch(TOOL_WORDS);
      expect(await domains.context.db.select().from(boughtDomains).where(eq(boughtDomains.domain, other))).toHaveLength(
        0,
      );
    });

    test("the owner sets up and removes the organization's address; a manager and a member cannot", async () => {
      const jar = await signedIn(owner.email);
      const before = await page(jar);
      expect(before.body).toContain("Set up this domain");
      const set = await jar.post(`${hatch.baseUrl}/dashboard/domains/company`, {
        csrf: csrfOf(before.body),
        domain: company,
      });
      expect(set.status).toBe(303);
      const shown = await page(jar);
      expect(words(shown.body)).toContain(`${company} is the organization's address for apps`);
      expect(shown.body).toContain(`data-company-domain="${company}"`);
      expect(shown.body).toContain('class="copy"');
      const row = async () => domains.context.db.select().from(hostnames).where(eq(hostnames.hostname, company));
      expect(await row()).toHaveLength(1);

      for (const person of [manager, member]) {
        const theirs = await signedIn(person.email);
        const view = await page(theirs);
        expect(view.body).toContain(`data-company-domain="${company}"`);
        expect(words(view.body)).toContain("The organization's owner and admins set this up.");
        expect(view.body).not.toContain("Stop using");
        const refused = await theirs.post(`${hatch.baseUrl}/dashboard/domains/company/remove`, {
          csrf: csrfOf(view.body),
        });
        expect(refused.status).toBe(403);
        expect(words(await refused.text())).not.toMatch(TOOL_WORDS);
      }
      expect(await row()).toHaveLength(1);

      const csrf = csrfOf(shown.body);
      const ask = await jar.post(`${hatch.baseUrl}/dashboard/domains/company/remove`, { csrf });
      expect(ask.status).toBe(200);
      const askBody = await ask.text();
      expect(askBody).toContain("Please confirm");
      const input = /name="input" value="([^"]*)"/.exec(askBody)![1]!.replaceAll("&quot;", '"');
      const removed = await jar.post(`${hatch.baseUrl}/dashboard/confirm`, {
        csrf,
        tool: "company_domain_set",
        input,
        back: "/dashboard/domains",
        action: "confirm",
      });
      expect(removed.status).toBe(303);
      expect(words((await page(jar)).body)).toContain("The organization's address for apps is removed");
      expect(await row()).toHaveLength(0);
    });

    test("another person sees neither the bought domain nor the organization's address", async () => {
      const jar = await signedIn(stranger.email);
      const view = await page(jar);
      expect(view.status).toBe(200);
      expect(view.body).not.toContain(wanted);
      expect(words(view.body)).not.toContain("Your organization's address for apps");
    });
  });
}
