import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { eq, sql } from "drizzle-orm";
import { hostnames, jobs, outbox } from "../services/domains/src/db/schema.ts";
import type { DomainsService } from "../services/domains/src/service.ts";
import { startTestDns, type TestDnsServer } from "./support/domains-dns.ts";
import { eventually } from "./support/eventually.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, connectFormClient, textOf, userWithToken } from "./support/mcp.ts";
import { refused } from "./support/orgs.ts";
import { MODES } from "./support/servers.ts";

// Company addresses and custom domains through the tools, with the DNS checks asking a real DNS server the test
// controls, the edge's `ask` endpoint, and the app host serving verified hostnames. (No edge TLS here: the
// certificate stage is skipped; domains-custom-tls.e2e.test.ts runs it with Caddy and Pebble.)

const EDGE = "edge.hatch-e2e.test";
const page = (title: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1></body></html>`;

interface DomainOut {
  hostname: string;
  stage: string;
  records: { type: string; name: string; value: string; ttl: number | null; status: string; purpose?: string }[];
  problem: string | null;
  checkedAt: string | null;
}

for (const mode of MODES) {
  describe(`custom domains and company addresses (${mode})`, () => {
    let hatch: TestHatch;
    let dns: TestDnsServer;
    let domains: DomainsService;
    let alice: Client;
    let bob: Client;
    let owner: Client;
    let member: Client;
    let ownerToken: string;
    let aliceToken: string;
    let acmeId: string;

    const ask = (domain: string) =>
      fetch(`http://127.0.0.1:${domains.http!.port}/tls/ask?domain=${encodeURIComponent(domain)}`);
    const viaHost = (host: string, path = "/") =>
      fetch(`${hatch.appHostUrl}${path}`, { headers: { Host: host }, redirect: "manual" });
    const hostnameRow = async (hostname: string) =>
      (await domains.context.db.select().from(hostnames).where(eq(hostnames.hostname, hostname)))[0];
    async function domainOf(client: Client, address: string, hostname: string): Promise<DomainOut | undefined> {
      const out = await callOk<{ domains: DomainOut[] }>(client, "custom_domains", { address });
      return out.domains.find((d) => d.hostname === hostname);
    }
    /** Publishes through a client whose user confirms (making an app public asks first). */
    async function publish(token: string, name: string, visibility: string) {
      const { client } = await connectFormClient(hatch, token, () => ({
        action: "accept",
        content: { confirm: true },
      }));
      const out = await callOk<{ status: string; address: string }>(client, "publish", {
        name,
        visibility,
        files: [{ path: "index.html", content: page(name), encoding: "utf8" }],
      });
      await client.close();
      expect(out.status).toBe("published");
    }

    beforeAll(async () => {
      dns = await startTestDns();
      hatch = await startTestHatch(mode, {
        serviceEnv: {
          DNS_SERVERS: dns.address,
          DOMAINS_HTTP_PORT: "0",
          DOMAINS_RECHECK_MS: "100",
          DOMAINS_JOB_POLL_MS: "50",
          EDGE_CNAME_TARGET: EDGE,
          EDGE_IPV4: "127.0.0.1",
        },
      });
      domains = hatch.services.get("domains") as DomainsService;
      const a = await userWithToken(hatch, { name: "Alice" });
      const b = await userWithToken(hatch, { name: "Bob" });
      const o = await userWithToken(hatch, { name: "Olga Owner" });
      const m = await userWithToken(hatch, { name: "Mo Member" });
      aliceToken = a.accessToken;
      ownerToken = o.accessToken;
      [alice, bob, owner, member] = (await Promise.all(
        [a, b, o, m].map((u) => connectClient(hatch, u.accessToken)),
      )) as [Client, Client, Client, Client];
      await publish(a.accessToken, "Alice Site", "public");
      await publish(a.accessToken, "Alice Other", "public");
      await publish(a.accessToken, "Alice Hidden", "private");
      await publish(b.accessToken, "Bob Site", "public");
      const created = await callOk<{ org: { id: string } }>(owner, "org_setup", { action: "create", name: "Acme E2E" });
      acmeId = created.org.id;
      await callOk(owner, "org_invite", { emails: [m.email], role: "member" });
      const mine = await callOk<{ invitationsForMe: { invitationId: string; org: { name: string } }[] }>(member, "org");
      await callOk(member, "org_setup", {
        action: "accept",
        invitationId: mine.invitationsForMe.find((i) => i.org.name === "Acme E2E")!.invitationId,
      });
      await publish(o.accessToken, "Acme Board", "public");
      await publish(m.accessToken, "Mo Notes", "org");
    }, 90_000);
    afterAll(async () => {
      for (const client of [alice, bob, owner, member]) await client?.close();
      await hatch?.stop();
      await dns?.close();
    });

    test("bad hostnames are refused: invalid names, '..', IP addresses, local names, Hatch's own hosts", async () => {
      for (const hostname of [
        "not a host",
        "todo..example.com",
        "192.168.1.20",
        "https://x.example.com/",
        "-x.example.com",
      ]) {
        expect(await refused(alice, "custom_domain", { address: "alice-site", hostname })).toContain(
          "domain name such as example.com",
        );
      }
      expect(await refused(alice, "custom_domain", { address: "alice-site", hostname: "app.localhost" })).toContain(
        "local name",
      );
      expect(
        await refused(alice, "custom_domain", { address: "alice-site", hostname: "x.edge.hatch-e2e.test" }),
      ).toContain("Hatch's own addresses");
      expect(
        await refused(alice, "custom_domain", { address: "bob-site", hostname: "bob-site.alice-e2e.test" }),
      ).toContain('You have no app at the address "bob-site"');
      expect(await domains.context.db.select().from(hostnames)).toEqual([]);
    });

    test("connect lists the exact records and what each is for; custom_domains shows the progress", async () => {
      const result = await alice.callTool({
        name: "custom_domain",
        arguments: { address: "alice-site", hostname: "WWW.Alice-E2E.test" },
      });
      expect(result.isError).toBeFalsy();
      const out = result.structuredContent as { status: string; hostname: string; domain: DomainOut };
      expect(out.status).toBe("connected");
      expect(out.hostname).toBe("www.alice-e2e.test");
      const token = (await hostnameRow("www.alice-e2e.test"))!.token;
      expect(out.domain.records).toEqual([
        {
          type: "TXT",
          name: "_hatch-challenge.www",
          value: token,
          ttl: 300,
          status: "missing",
          purpose: expect.stringContaining("proves you control"),
        },
        {
          type: "CNAME",
          name: "www",
          value: EDGE,
          ttl: 3600,
          status: "missing",
          purpose: expect.stringContaining("edge"),
        },
      ]);
      expect(textOf(result)).toContain(`CNAME www → ${EDGE}`);
      const checked = await eventually(async () => {
        const d = await domainOf(alice, "alice-site", "www.alice-e2e.test");
        return d?.checkedAt ? d : undefined;
      }, "the first DNS check");
      expect(checked.stage).toBe("dns");
      expect(checked.problem).toContain("is not there yet");
      expect(dns.asked("_hatch-challenge.www.alice-e2e.test", "TXT")).toBeGreaterThan(0);
      // Not verified: the edge gets no certificate for it and the app host serves nothing there.
      expect((await ask("www.alice-e2e.test")).status).toBe(404);
      expect((await viaHost("www.alice-e2e.test")).status).toBe(404);
    });

    test("a wrong record gives a plain-words problem; the right ones make it live and served", async () => {
      const token = (await hostnameRow("www.alice-e2e.test"))!.token;
      dns.add("_hatch-challenge.www.alice-e2e.test", "TXT", token);
      dns.add("www.alice-e2e.test", "CNAME", "x.example.net");
      const wrong = await eventually(async () => {
        const d = await domainOf(alice, "alice-site", "www.alice-e2e.test");
        return d?.problem?.includes("x.example.net") ? d : undefined;
      }, "the wrong CNAME to be reported");
      expect(wrong.problem).toContain(
        `The CNAME www.alice-e2e.test points to x.example.net, it should point to ${EDGE}`,
      );
      expect(wrong.records.map((r) => r.status)).toEqual(["ok", "wrong"]);
      dns.remove("www.alice-e2e.test", "CNAME");
      dns.add("www.alice-e2e.test", "CNAME", EDGE);
      const live = await eventually(async () => {
        const d = await domainOf(alice, "alice-site", "www.alice-e2e.test");
        return d?.stage === "live" ? d : undefined;
      }, "the hostname to go live");
      expect(live).toMatchObject({
        problem: null,
        records: [expect.objectContaining({ status: "ok" }), expect.objectContaining({ status: "ok" })],
      });
      expect((await ask("www.alice-e2e.test")).status).toBe(200);
      const served = await viaHost("www.alice-e2e.test");
      expect(served.status).toBe(200);
      expect(await served.text()).toContain("<h1>Alice Site</h1>");
      const events = await eventually(async () => {
        const rows = await domains.context.db.select({ subject: outbox.subject }).from(outbox);
        const subjects = rows.map((r) => r.subject.replace("events.domains.", ""));
        return subjects.includes("hostname.live") ? subjects : undefined;
      }, "the events");
      expect(events).toEqual(expect.arrayContaining(["hostname.connected", "hostname.verified", "hostname.live"]));
    });

    test("the ask endpoint: a bad or missing domain is 400; unknown names are 404", async () => {
      expect((await fetch(`http://127.0.0.1:${domains.http!.port}/tls/ask`)).status).toBe(400);
      expect((await ask("not a name")).status).toBe(400);
      expect((await ask("127.0.0.1")).status).toBe(400);
      expect((await ask("nobody.example.test")).status).toBe(404);
      // The apps domain's own names, an app's and a version preview's (`v<N>--<address>`), are never certified on
      // demand: they are one label below the apps domain, covered by its one wildcard certificate
      // (test/version-preview-tls.test.ts), and no custom hostname may be under the apps domain.
      const appsHost = new URL(hatch.appHostUrl).hostname;
      for (const name of [`alice-site.${appsHost}`, `v1--alice-site.${appsHost}`])
        expect({ name, status: (await ask(name)).status }).toEqual({ name, status: 404 });
      expect(
        (await fetch(`http://127.0.0.1:${domains.http!.port}/tls/ask?domain=x.example.com`, { method: "POST" })).status,
      ).toBe(405);
    });

    test("a hostname serves one app: another app of the account and another account are refused", async () => {
      expect(
        await refused(alice, "custom_domain", { address: "alice-other", hostname: "www.alice-e2e.test" }),
      ).toContain("already connected to another app of this account");
      expect(await refused(bob, "custom_domain", { address: "bob-site", hostname: "www.alice-e2e.test" })).toContain(
        "in use on Hatch by another account, which has proven it owns it",
      );
      // Connecting it again to the same app only answers its state.
      expect(
        await callOk(alice, "custom_domain", { address: "alice-site", hostname: "www.alice-e2e.test" }),
      ).toMatchObject({ status: "connected", domain: { stage: "live" } });
    });

    test("an unproven claim of another account lapses after 7 days and may be taken over", async () => {
      await callOk(bob, "custom_domain", { address: "bob-site", hostname: "claimed.alice-e2e.test" });
      expect(
        await refused(alice, "custom_domain", { address: "alice-other", hostname: "claimed.alice-e2e.test" }),
      ).toContain("claimed it and may still prove it");
      await domains.context.db
        .update(hostnames)
        .set({ createdAt: sql`now() - interval '8 days'` })
        .where(eq(hostnames.hostname, "claimed.alice-e2e.test"));
      expect(
        await callOk(alice, "custom_domain", { address: "alice-other", hostname: "claimed.alice-e2e.test" }),
      ).toMatchObject({ status: "connected" });
      expect(await hostnameRow("claimed.alice-e2e.test")).toMatchObject({ address: "alice-other" });
    });

    test("a non-public app on a custom hostname is sent to its own address (sign-in lives there)", async () => {
      await callOk(alice, "custom_domain", { address: "alice-hidden", hostname: "hidden.alice-e2e.test" });
      const token = (await hostnameRow("hidden.alice-e2e.test"))!.token;
      dns.add("_hatch-challenge.hidden.alice-e2e.test", "TXT", token);
      dns.add("hidden.alice-e2e.test", "CNAME", EDGE);
      await eventually(
        async () => (await domainOf(alice, "alice-hidden", "hidden.alice-e2e.test"))?.stage === "live",
        "hidden to go live",
      );
      const response = await viaHost("hidden.alice-e2e.test", "/notes?x=1");
      expect(response.status).toBe(302);
      expect(response.headers.get("location")).toBe(`${hatch.appHostUrl.replace("//", "//alice-hidden.")}/notes?x=1`);
    });

    test("disconnect asks the user first; afterwards the hostname serves nothing", async () => {
      const text = await alice.callTool({
        name: "custom_domain",
        arguments: { address: "alice-site", hostname: "www.alice-e2e.test", action: "disconnect" },
      });
      expect(JSON.stringify(text)).toContain("confirm");
      // The question is a result that fits the tool's output schema (the link for the user), not an error.
      expect(text.isError).not.toBe(true);
      expect(text.structuredContent).toMatchObject({
        status: "needs_user",
        hostname: "www.alice-e2e.test",
        userAction: { kind: "open_link" },
      });
      expect(await hostnameRow("www.alice-e2e.test")).toBeDefined();
      const { client, asked } = await connectFormClient(hatch, aliceToken, () => ({
        action: "accept",
        content: { confirm: true },
      }));
      expect(
        await callOk(client, "custom_domain", {
          address: "alice-site",
          hostname: "www.alice-e2e.test",
          action: "disconnect",
        }),
      ).toMatchObject({ status: "disconnected", domain: null });
      expect(asked[0]).toContain("Take Alice Site (alice-site) off www.alice-e2e.test?");
      await client.close();
      expect(await hostnameRow("www.alice-e2e.test")).toBeUndefined();
      expect((await ask("www.alice-e2e.test")).status).toBe(404);
      await eventually(
        async () => (await viaHost("www.alice-e2e.test")).status === 404,
        "the app host to drop the hostname",
      );
      expect(
        await refused(alice, "custom_domain", {
          address: "alice-site",
          hostname: "www.alice-e2e.test",
          action: "disconnect",
        }),
      ).toContain("is not connected to alice-site");
    });

    test("a company member without custom_domains is refused; only owners and admins set the company address", async () => {
      expect(
        await refused(member, "custom_domain", { address: "mo-notes", hostname: "notes.acme-e2e.test" }),
      ).toContain("needs the custom_domains permission");
      expect(await refused(member, "company_domain_set", { action: "set", domain: "apps.acme-e2e.test" })).toContain(
        "Only the organization's owner and admins",
      );
      expect(await refused(alice, "company_domain_set", { action: "set", domain: "apps.alice-e2e.test" })).toContain(
        "org_setup",
      );
      expect(await callOk(alice, "company_domain")).toMatchObject({ domain: null });
      expect(await callOk(member, "company_domain")).toMatchObject({ domain: null, records: [] });
      expect(await refused(owner, "company_domain_set", { action: "set" })).toContain("Give domain for action set");
    });

    test("a company address serves the company's apps at <address>.<domain>, and only those", async () => {
      const set = await callOk<{ status: string; records: DomainOut["records"] }>(owner, "company_domain_set", {
        action: "set",
        domain: "apps.acme-e2e.test",
      });
      expect(set.status).toBe("set");
      expect(set.records.map((r) => `${r.type} ${r.name} ${r.value}`)).toEqual([
        `TXT _hatch-challenge.apps ${set.records[0]!.value}`,
        `CNAME *.apps ${EDGE}`,
      ]);
      expect(await refused(bob, "custom_domain", { address: "bob-site", hostname: "apps.acme-e2e.test" })).toContain(
        "in use on Hatch by another account",
      );
      dns.add("_hatch-challenge.apps.acme-e2e.test", "TXT", set.records[0]!.value);
      dns.add("*.apps.acme-e2e.test", "CNAME", EDGE);
      const shown = await eventually(async () => {
        const out = await callOk<{ stage: string; records: unknown[]; appUrlPattern: string }>(
          member,
          "company_domain",
        );
        return out.stage === "live" ? out : undefined;
      }, "the company domain to go live");
      expect(shown).toMatchObject({ records: [], appUrlPattern: "http://<address>.apps.acme-e2e.test" });
      expect((await ask("acme-board.apps.acme-e2e.test")).status).toBe(200);
      expect((await ask("apps.acme-e2e.test")).status).toBe(404);
      const served = await viaHost("acme-board.apps.acme-e2e.test");
      expect(served.status).toBe(200);
      expect(await served.text()).toContain("Acme Board");
      // Another account's app is not served under the company's domain.
      expect((await viaHost("bob-site.apps.acme-e2e.test")).status).toBe(404);
      // And a hostname under it cannot be claimed by another account.
      expect(
        await refused(bob, "custom_domain", { address: "bob-site", hostname: "bob-site.apps.acme-e2e.test" }),
      ).toContain("another account's company address");
    });

    test("removing the company address asks first", async () => {
      const { client, asked } = await connectFormClient(hatch, ownerToken, () => ({
        action: "accept",
        content: { confirm: true },
      }));
      expect(await callOk(client, "company_domain_set", { action: "remove" })).toMatchObject({
        status: "removed",
        domain: "apps.acme-e2e.test",
      });
      expect(asked[0]).toContain("Stop using apps.acme-e2e.test");
      await client.close();
      expect((await ask("acme-board.apps.acme-e2e.test")).status).toBe(404);
      await eventually(
        async () => (await viaHost("acme-board.apps.acme-e2e.test")).status === 404,
        "the app host to drop the company domain",
      );
      expect(await callOk(owner, "company_domain")).toMatchObject({ domain: null });
      expect(acmeId).toBeTruthy();
    });

    test("deleting an app releases its hostnames", async () => {
      expect(await hostnameRow("hidden.alice-e2e.test")).toBeDefined();
      const { client } = await connectFormClient(hatch, aliceToken, () => ({
        action: "accept",
        content: { confirm: true },
      }));
      await callOk(client, "delete_tool", { address: "alice-hidden" });
      await client.close();
      await eventually(
        async () => (await hostnameRow("hidden.alice-e2e.test")) === undefined,
        "the hostname to be released",
      );
      expect((await ask("hidden.alice-e2e.test")).status).toBe(404);
      const open = await domains.context.db.select().from(jobs).where(eq(jobs.key, "hidden.alice-e2e.test"));
      expect(open.every((job) => job.doneAt !== null)).toBe(true);
    });
  });
}
