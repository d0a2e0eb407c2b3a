import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { eq } from "drizzle-orm";
import { boughtDomains, hostnames } from "../services/domains/src/db/schema.ts";
import type { DomainsService } from "../services/domains/src/service.ts";
import { csrfOf, signedInJar } from "./support/cookies.ts";
import { startTestDns, type TestDnsServer } from "./support/domains-dns.ts";
import { joinOrg } from "./support/orgs.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

// The domain pages over real HTTP like a browser without JavaScript: an owner connects a domain, sees the DNS records
// to add (each with a copy button) and the progress, checks again and disconnects through the confirm step; a member
// without rights on the app and a stranger see nothing and change nothing; the bought domains list shows each one's
// stage and renewal date.

const PASSWORD = "correct horse battery";
const files = (text: string) => [{ path: "index.html", content: `<h1>${text}</h1>` }];

for (const mode of MODES) {
  describe(`dashboard domain pages (${mode})`, () => {
    let hatch: TestHatch;
    let dns: TestDnsServer;
    let domains: DomainsService;
    let owner: Awaited<ReturnType<typeof userWithToken>>;
    let member: Awaited<ReturnType<typeof userWithToken>>;
    let stranger: Awaited<ReturnType<typeof userWithToken>>;
    let ownerAi: Client;
    let memberAi: Client;
    let address: string;
    const hostname = `shop-${mode}.dash-domains.test`;

    beforeAll(async () => {
      dns = await startTestDns();
      hatch = await startTestHatch(mode, {
        serviceEnv: {
          DNS_SERVERS: dns.address,
          DOMAINS_RECHECK_MS: "100",
          DOMAINS_JOB_POLL_MS: "50",
          EDGE_CNAME_TARGET: "edge.dash-domains.test",
          EDGE_IPV4: "127.0.0.1",
        },
      });
      domains = hatch.services.get("domains") as DomainsService;
      const tag = `${mode}-${process.pid}`;
      owner = await userWithToken(hatch, { name: "Olga", email: `dom-owner-${tag}@example.com` });
      member = await userWithToken(hatch, { name: "Mo", email: `dom-member-${tag}@example.com` });
      stranger = await userWithToken(hatch, { name: "Sam", email: `dom-stranger-${tag}@example.com` });
      ownerAi = await connectClient(hatch, owner.accessToken);
      memberAi = await connectClient(hatch, member.accessToken);
      await callOk(ownerAi, "org_setup", { action: "create", name: `Dom Co ${tag}` });
      await joinOrg(ownerAi, memberAi, member.email, { role: "member" });
      const published = await callOk<{ address: string }>(ownerAi, "publish", {
        name: `dom-shop-${mode}`,
        visibility: "org",
        files: files("shop"),
      });
      address = published.address;
    }, 90_000);
    afterAll(async () => {
      await ownerAi?.close();
      await memberAi?.close();
      await hatch?.stop();
      await dns?.close();
    });

    const signedIn = (email: string) => signedInJar(hatch.baseUrl, email, PASSWORD);
    const pagePath = () => `/dashboard/apps/${address}/domains`;
    const rows = async () => domains.context.db.select().from(hostnames).where(eq(hostnames.hostname, hostname));

    test("the owner connects a domain, sees the records with copy buttons and the progress, checks again", async () => {
      const jar = await signedIn(owner.email);
      const empty = await jar.fetch(`${hatch.baseUrl}${pagePath()}`);
      expect(empty.status).toBe(200);
      const emptyBody = await empty.text();
      expect(emptyBody).toContain("This app is on no domain of yours yet.");
      const csrf = csrfOf(emptyBody);

      // A bad name is refused on the page, with what was typed kept in the field.
      const bad = await jar.post(`${hatch.baseUrl}${pagePath()}/connect`, { csrf, hostname: "not a host" });
      expect(bad.status).toBe(400);
      const badBody = await bad.text();
      expect(badBody).toContain('role="alert"');
      expect(badBody).toContain('value="not a host"');
      expect(await rows()).toEqual([]);

      const connected = await jar.post(`${hatch.baseUrl}${pagePath()}/connect`, { csrf, hostname });
      expect(connected.status).toBe(303);
      expect(connected.headers.get("location")).toBe(pagePath());
      const page = await jar.fetch(`${hatch.baseUrl}${pagePath()}`);
      const body = await page.text();
      expect(body).toContain(`${hostname} is connected.`);
      expect(body).toContain(`data-domain="${hostname}"`);
      expect(body).toContain('aria-current="step"');
      // Every record's name and value is a copyable code element (the page's script adds the buttons).
      const [row] = await rows();
      expect(row?.stage).toBe("dns");
      const out = await callOk<{ domains: { hostname: string; records: { name: string; value: string }[] }[] }>(
        ownerAi,
        "custom_domains",
        { address },
      );
      const records = out.domains.find((d) => d.hostname === hostname)!.records;
      expect(records.length).toBeGreaterThan(0);
      for (const r of records) {
        expect(body).toContain(`class="copy" data-copy-label="the name of record`);
        expect(body).toContain(`>${r.value}</code>`);
      }
      expect(body).not.toMatch(/custom_domains?\b|domain_status|tool_/);

      const check = await jar.post(`${hatch.baseUrl}${pagePath()}/check`, { csrf });
      expect(check.status).toBe(303);
      expect(await (await jar.fetch(`${hatch.baseUrl}${pagePath()}`)).text()).toContain(
        "Checking the DNS records again",
      );
    });

    test("a member without rights on the app and a stranger see nothing and change nothing", async () => {
      for (const who of [member, stranger]) {
        const jar = await signedIn(who.email);
        const page = await jar.fetch(`${hatch.baseUrl}${pagePath()}`);
        expect([403, 404]).toContain(page.status);
        expect(await page.text()).not.toContain(hostname);
        const csrf = csrfOf(await (await jar.fetch(`${hatch.baseUrl}/dashboard`)).text());
        const other = `other-${mode}.dash-domains.test`;
        const connect = await jar.post(`${hatch.baseUrl}${pagePath()}/connect`, { csrf, hostname: other });
        expect([403, 404]).toContain(connect.status);
        const disconnect = await jar.post(`${hatch.baseUrl}${pagePath()}/disconnect`, { csrf, hostname });
        expect([403, 404]).toContain(disconnect.status);
        expect(await domains.context.db.select().from(hostnames).where(eq(hostnames.hostname, other))).toEqual([]);
        expect(await rows()).toHaveLength(1);
      }
    });

    test("a form without its CSRF token changes nothing", async () => {
      const jar = await signedIn(owner.email);
      const refused = await jar.post(`${hatch.baseUrl}${pagePath()}/disconnect`, { hostname });
      expect(refused.status).toBe(403);
      expect(await rows()).toHaveLength(1);
    });

    test("disconnect asks first; confirming takes the domain off", async () => {
      const jar = await signedIn(owner.email);
      const csrf = csrfOf(await (await jar.fetch(`${hatch.baseUrl}${pagePath()}`)).text());
      const ask = await jar.post(`${hatch.baseUrl}${pagePath()}/disconnect`, { csrf, hostname });
      expect(ask.status).toBe(200);
      const askBody = await ask.text();
      expect(askBody).toContain("Please confirm");
      expect(askBody).toContain(`Take `);
      expect(await rows()).toHaveLength(1);
      const input = /name="input" value="([^"]*)"/.exec(askBody)![1]!.replaceAll("&quot;", '"');
      const confirmed = await jar.post(`${hatch.baseUrl}/dashboard/confirm`, {
        csrf,
        tool: "custom_domain",
        input,
        back: pagePath(),
        action: "confirm",
      });
      expect(confirmed.status).toBe(303);
      expect(confirmed.headers.get("location")).toBe(pagePath());
      expect(await rows()).toEqual([]);
      const after = await (await jar.fetch(`${hatch.baseUrl}${pagePath()}`)).text();
      expect(after).toContain("This app is on no domain of yours yet.");
      // Said for a person, not the tool's words for an AI.
      expect(after).toContain(`${hostname} is disconnected.`);
      expect(after).not.toContain("the user");
    });

    test("bought domains: each one's stage and renewal date, only the buyer's account's", async () => {
      const ownerAccount = (await callOk<{ org: { id: string } | null }>(ownerAi, "org")).org!.id;
      const domain = `bought-${mode}-${process.pid}.test`;
      await domains.context.db.insert(boughtDomains).values({
        domain,
        accountId: ownerAccount,
        boughtBy: "test",
        stage: "certificate",
        registrar: "simulated",
        firstYearMinor: 1200,
        renewalMinor: 1500,
        renewsAt: new Date("2027-11-25T00:00:00Z"),
        chargeKey: `test-${domain}`,
        chargeStatus: "charged",
      });
      const jar = await signedIn(owner.email);
      const page = await jar.fetch(`${hatch.baseUrl}/dashboard/domains`);
      expect(page.status).toBe(200);
      const body = await page.text();
      expect(body).toContain(`data-bought="${domain}"`);
      expect(body).toContain("the HTTPS certificate is being issued");
      expect(body).toContain("2027-11-25");
      expect(body).toContain('aria-current="page">Domains</a>');
      const strangers = await (await signedIn(stranger.email)).fetch(`${hatch.baseUrl}/dashboard/domains`);
      expect(strangers.status).toBe(200);
      const strangerBody = await strangers.text();
      expect(strangerBody).not.toContain(domain);
      expect(strangerBody).toContain("You have not bought a domain.");
    });
  });
}
