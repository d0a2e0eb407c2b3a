import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { csrfOf, HostCookieJar, signedInJar } from "./support/cookies.ts";
import { joinOrg } from "./support/orgs.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

// The dashboard's account switcher over real HTTP: after creating an organization, the owner's personal apps and the
// Pro plan of their personal account stay reachable by switching to it (and a checkout there pays for the personal
// account, not the organization); each list and the billing page say which account they show. A manager and a member
// switch between their own accounts; billing of the organization is refused to them. Someone else's account is
// never shown: choosing it is not found, and a cookie naming it is ignored. The AI keeps acting as before.

const PASSWORD = "correct horse battery";
const files = (text: string) => [{ path: "index.html", content: `<h1>${text}</h1>` }];

/** The switcher's options on a page: [account id, label]. */
function accountsOn(page: string): [string, string][] {
  const select = /<select [^>]*name="account">([\s\S]*?)<\/select>/.exec(page)?.[1] ?? "";
  return [...select.matchAll(/<option value="([^"]+)"[^>]*>([^<]+)<\/option>/g)].map((m) => [m[1]!, m[2]!]);
}

for (const mode of MODES) {
  describe(`dashboard account switcher (${mode})`, () => {
    let hatch: TestHatch;
    let owner: Awaited<ReturnType<typeof userWithToken>>;
    let manager: Awaited<ReturnType<typeof userWithToken>>;
    let member: Awaited<ReturnType<typeof userWithToken>>;
    let stranger: Awaited<ReturnType<typeof userWithToken>>;
    let ownerAi: Client;
    let managerAi: Client;
    let memberAi: Client;
    let solo: string;
    let shared: string;
    const tag = `${mode}-${process.pid}`;
    const orgName = `Switch Co ${tag}`;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      owner = await userWithToken(hatch, { name: "Olga", email: `acc-owner-${tag}@example.com` });
      manager = await userWithToken(hatch, { name: "Max", email: `acc-manager-${tag}@example.com` });
      member = await userWithToken(hatch, { name: "Mo", email: `acc-member-${tag}@example.com` });
      stranger = await userWithToken(hatch, { name: "Sam", email: `acc-stranger-${tag}@example.com` });
      ownerAi = await connectClient(hatch, owner.accessToken);
      managerAi = await connectClient(hatch, manager.accessToken);
      memberAi = await connectClient(hatch, member.accessToken);
      solo = (
        await callOk<{ address: string }>(ownerAi, "publish", {
          name: `solo-${mode}`,
          visibility: "private",
          files: files("solo"),
        })
      ).address;
      await callOk(ownerAi, "org_setup", { action: "create", name: orgName });
      await joinOrg(ownerAi, managerAi, manager.email, { role: "manager" });
      await joinOrg(ownerAi, memberAi, member.email, { role: "member" });
      shared = (
        await callOk<{ address: string }>(ownerAi, "publish", {
          name: `team-${mode}`,
          visibility: "org",
          files: files("team"),
        })
      ).address;
    }, 120_000);
    afterAll(async () => {
      await Promise.all([ownerAi?.close(), managerAi?.close(), memberAi?.close()]);
      await hatch?.stop();
    });

    const signedIn = (email: string) => signedInJar(hatch.baseUrl, email, PASSWORD);
    const get = async (jar: HostCookieJar, path: string) => {
      const response = await jar.fetch(`${hatch.baseUrl}${path}`);
      return { status: response.status, body: await response.text() };
    };
    async function switchTo(jar: HostCookieJar, label: RegExp, back = "/dashboard"): Promise<Response> {
      const page = await get(jar, back);
      const option = accountsOn(page.body).find(([, text]) => label.test(text));
      if (!option) throw new Error(`no account ${label} on ${back}`);
      return jar.post(`${hatch.baseUrl}/dashboard/account`, {
        csrf: csrfOf(page.body),
        account: option[0],
        back,
      });
    }
    /** The apps listed under the account's own heading (not those shared with the person). */
    const ownList = (page: string) => page.slice(page.indexOf('id="mine"'), page.indexOf('id="shared"'));

    test("the owner sees the organization's apps first, and switches to their personal apps and back", async () => {
      const jar = await signedIn(owner.email);
      const first = await get(jar, "/dashboard");
      expect(first.status).toBe(200);
      expect(accountsOn(first.body).map(([, label]) => label)).toEqual(["Personal", `${orgName} (organization)`]);
      expect(first.body).toContain(`Your apps in ${orgName}`);
      expect(ownList(first.body)).toContain(`data-address="${shared}"`);
      expect(ownList(first.body)).not.toContain(`data-address="${solo}"`);
      expect(first.body).toContain("1 more app of yours is in your personal account");

      const switched = await switchTo(jar, /^Personal$/);
      expect(switched.status).toBe(303);
      expect(switched.headers.get("location")).toBe("/dashboard");
      const personal = await get(jar, "/dashboard");
      expect(personal.body).toContain("Your personal apps");
      expect(ownList(personal.body)).toContain(`data-address="${solo}"`);
      expect(ownList(personal.body)).not.toContain(`data-address="${shared}"`);
      // The personal app's page and an action on it still work while the personal account is shown.
      const app = await get(jar, `/dashboard/apps/${solo}`);
      expect(app.status).toBe(200);
      expect(app.body).toContain('data-account-kind="personal"');

      // The AI still acts in the organization: the switch is the dashboard's view only.
      expect((await callOk<{ kind: string }>(ownerAi, "whoami")).kind).toBe("company");

      await switchTo(jar, /organization/);
      expect(ownList((await get(jar, "/dashboard")).body)).toContain(`data-address="${shared}"`);
      // The same switcher on the pages outside the apps list: billing and AI keys show the account they are for.
      for (const path of ["/dashboard/billing", "/dashboard/ai-keys?scope=mine", "/dashboard/domains"]) {
        const other = await get(jar, path);
        expect(other.status).toBe(200);
        expect(other.body).toContain('data-account-kind="company"');
      }
    });

    test("personal billing stays visible after the organization: Pro paid for the personal account only", async () => {
      const jar = await signedIn(owner.email);
      await switchTo(jar, /^Personal$/, "/dashboard/billing");
      const before = await get(jar, "/dashboard/billing");
      expect(before.status).toBe(200);
      expect(before.body).toContain("Billing of your personal account");
      expect(before.body).toContain('data-plan="free"');
      expect(before.body).toContain("Pay $12 a month");
      const checkout = await get(jar, "/dashboard/billing/checkout?plan=pro");
      const paid = await jar.post(`${hatch.baseUrl}/dashboard/billing/checkout`, {
        csrf: csrfOf(checkout.body),
        card: "4242 4242 4242 4242",
        plan: "pro",
      });
      expect(paid.status).toBe(303);
      const after = await get(jar, "/dashboard/billing");
      expect(after.body).toContain('data-plan="pro"');
      expect(after.body).toContain("Your personal account is on the <strong");
      expect(after.body).toMatch(/It renews on <strong>\d{4}-\d{2}-\d{2}<\/strong>/);
      // Usage against the plan's limits: one app of Pro's 50.
      expect(after.body).toMatch(/data-usage="apps"><span>Apps: <strong>1<\/strong> of 50/);
      // A custom domain on the personal app counts against Pro's 10 (the count is asked of the domains service).
      expect(after.body).toMatch(/data-usage="custom-domains"><span>Custom domains: <strong>0<\/strong> of 10/);
      await callOk(ownerAi, "custom_domain", { address: solo, hostname: `solo-${mode}.accounts.test` });
      expect((await get(jar, "/dashboard/billing")).body).toMatch(
        /data-usage="custom-domains"><span>Custom domains: <strong>1<\/strong> of 10/,
      );

      await switchTo(jar, /organization/, "/dashboard/billing");
      const org = await get(jar, "/dashboard/billing");
      expect(org.body).toContain(`Billing of ${orgName}`);
      expect(org.body).toContain('data-plan="free"');
      // Three people: owner, manager and member, against Free's three.
      expect(org.body).toMatch(/data-usage="seats"><span>People: <strong>3<\/strong> of 3/);
      expect(org.body).toContain("Pay $60 a month for 3 seats");
      // The AI's billing answers for the account it acts in: the organization, still free.
      expect((await callOk<{ plan: string }>(ownerAi, "billing")).plan).toBe("free");
    });

    test("a manager and a member switch between their own accounts; the organization's billing is not theirs", async () => {
      for (const person of [manager, member]) {
        const jar = await signedIn(person.email);
        const org = await get(jar, "/dashboard/billing");
        expect(org.status).toBe(403);
        // The refusal keeps the switcher: they switch to their personal billing from there.
        expect(accountsOn(org.body).map(([, label]) => label)).toContain("Personal");
        await switchTo(jar, /^Personal$/, "/dashboard/billing");
        const own = await get(jar, "/dashboard/billing");
        expect(own.status).toBe(200);
        expect(own.body).toContain("Billing of your personal account");
        const list = await get(jar, "/dashboard");
        expect(list.body).toContain("Your personal apps");
        // The organization's app is still shared with them in their personal view, never listed as theirs.
        expect(ownList(list.body)).not.toContain(`data-address="${shared}"`);
      }
    });

    test("another person's account is not found, and a cookie naming it is ignored", async () => {
      const ownerJar = await signedIn(owner.email);
      const orgId = accountsOn((await get(ownerJar, "/dashboard")).body).find(([, l]) => /organization/.test(l))![0];
      const jar = await signedIn(stranger.email);
      const page = await get(jar, "/dashboard");
      expect(accountsOn(page.body)).toEqual([]);
      expect(page.body).toContain('data-account-kind="personal"');
      const refused = await jar.post(`${hatch.baseUrl}/dashboard/account`, {
        csrf: csrfOf(page.body),
        account: orgId,
        back: "/dashboard",
      });
      expect(refused.status).toBe(404);
      expect(jar.namesFor(hatch.baseUrl)).not.toContain("hatch_account");

      // A cookie set by hand (naming the owner, or the stranger with the owner's organization) shows only their own.
      const names = jar.namesFor(hatch.baseUrl);
      const cookieLine = names.map((n) => `${n}=${jar.valueFor(hatch.baseUrl, n)}`).join("; ");
      for (const forged of [`${owner.id}.${orgId}`, `${stranger.id}.${orgId}`]) {
        const response = await fetch(`${hatch.baseUrl}/dashboard/billing`, {
          headers: { cookie: `${cookieLine}; hatch_account=${encodeURIComponent(forged)}` },
          redirect: "manual",
        });
        expect(response.status).toBe(200);
        const body = await response.text();
        expect(body).toContain("Billing of your personal account");
        expect(body).not.toContain(orgName);
      }
    });
  });
}
