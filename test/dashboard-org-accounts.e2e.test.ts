import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { members } from "../services/orgs/src/db/schema.ts";
import { csrfOf, HostCookieJar, signedInJar } from "./support/cookies.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, connectFormClient, textOf, userWithToken } from "./support/mcp.ts";
import { joinOrg } from "./support/orgs.ts";
import { MODES } from "./support/servers.ts";

// /dashboard/org follows the account switcher, over real HTTP. Pat is a manager of Alpha (the account Pat's AI acts
// in) and a member of Beta, plus their personal account. Alpha shows Alpha's people with a manager's forms; switched to
// Beta, the page is Beta's with a member's view, and orgs refuses a manager's action there; switched to their personal
// account, the page says so and lists both organizations, each a button that switches to it. The AI keeps acting in
// Alpha throughout. The product lets a person join one organization at a time; the data and the switcher allow more
// (session.accounts lists every membership), so Pat's place in Beta is written straight into orgs' table.

const PASSWORD = "correct horse battery";

/** The switcher's options on a page: [account id, label]. */
function accountsOn(page: string): [string, string][] {
  const select = /<select [^>]*name="account">([\s\S]*?)<\/select>/.exec(page)?.[1] ?? "";
  return [...select.matchAll(/<option value="([^"]+)"[^>]*>([^<]+)<\/option>/g)].map((m) => [m[1]!, m[2]!]);
}

/** The h1 of a page. */
const headingOf = (page: string) => /<h1>([^<]*)<\/h1>/.exec(page)?.[1];

for (const mode of MODES) {
  describe(`/dashboard/org follows the account switcher (${mode})`, () => {
    let hatch: TestHatch;
    let ada: Awaited<ReturnType<typeof userWithToken>>;
    let ben: Awaited<ReturnType<typeof userWithToken>>;
    let pat: Awaited<ReturnType<typeof userWithToken>>;
    let solo: Awaited<ReturnType<typeof userWithToken>>;
    let adaAi: Client;
    let benAi: Client;
    let patAi: Client;
    let betaId: string;
    const tag = `${mode}-${process.pid}`;
    const alpha = `Alpha ${tag}`;
    const beta = `Beta ${tag}`;
    const waiting = `alpha-guest-${tag}@example.com`;
    const betaGuest = `beta-guest-${tag}@example.com`;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      ada = await userWithToken(hatch, { name: "Ada", email: `org-ada-${tag}@example.com` });
      ben = await userWithToken(hatch, { name: "Ben", email: `org-ben-${tag}@example.com` });
      pat = await userWithToken(hatch, { name: "Pat", email: `org-pat-${tag}@example.com` });
      solo = await userWithToken(hatch, { name: "Sol", email: `org-sol-${tag}@example.com` });
      [adaAi, benAi, patAi] = (await Promise.all(
        [ada, ben, pat].map((person) => connectClient(hatch, person.accessToken)),
      )) as [Client, Client, Client];
      await callOk(adaAi, "org_setup", { action: "create", name: alpha });
      await joinOrg(adaAi, patAi, pat.email, { role: "manager" });
      await callOk(adaAi, "org_invite", { emails: [waiting], role: "member" });
      const created = await callOk<{ org: { id: string } }>(benAi, "org_setup", { action: "create", name: beta });
      betaId = created.org.id;
      await callOk(benAi, "org_invite", { emails: [betaGuest], role: "member" });
      await hatch.databases
        .get("orgs")!
        .insert(members)
        .values({ accountId: betaId, userId: pat.id, role: "member", permissions: [] });
    }, 120_000);
    afterAll(async () => {
      await Promise.all([adaAi?.close(), benAi?.close(), patAi?.close()]);
      await hatch?.stop();
    });

    const signedIn = (email: string) => signedInJar(hatch.baseUrl, email, PASSWORD);
    const get = async (jar: HostCookieJar, path: string) => {
      const response = await jar.fetch(`${hatch.baseUrl}${path}`);
      return { status: response.status, body: await response.text() };
    };
    async function switchTo(jar: HostCookieJar, label: RegExp): Promise<void> {
      const page = await get(jar, "/dashboard/org");
      const option = accountsOn(page.body).find(([, text]) => label.test(text));
      if (!option) throw new Error(`no account ${label} on /dashboard/org`);
      const answer = await jar.post(`${hatch.baseUrl}/dashboard/account`, {
        csrf: csrfOf(page.body),
        account: option[0],
        back: "/dashboard/org",
      });
      expect(answer.status).toBe(303);
      expect(answer.headers.get("location")).toBe("/dashboard/org");
    }
    const patAiAccount = async () => textOf(await patAi.callTool({ name: "whoami", arguments: {} }));

    test("the account the AI acts in first: Alpha, with a manager's forms and the activity log", async () => {
      const jar = await signedIn(pat.email);
      const page = await get(jar, "/dashboard/org");
      expect(page.status).toBe(200);
      expect(accountsOn(page.body).map(([, label]) => label)).toEqual([
        "Personal",
        `${alpha} (organization)`,
        `${beta} (organization)`,
      ]);
      expect(headingOf(page.body)).toBe(alpha);
      expect(page.body).toContain("You are manager");
      expect(page.body).toContain(`data-member="${ada.email}"`);
      expect(page.body).toContain(`data-member="${pat.email}"`);
      expect(page.body).not.toContain(`data-member="${ben.email}"`);
      expect(page.body).toContain(`data-invitation="${waiting}"`);
      expect(page.body).toContain("Send invitations");
      expect(page.body).toContain('id="activity"');
    });

    test("switched to Beta: Beta's people and a member's view; orgs refuses a manager's action there", async () => {
      const jar = await signedIn(pat.email);
      await switchTo(jar, new RegExp(`^${beta}`));
      const page = await get(jar, "/dashboard/org");
      expect(page.status).toBe(200);
      expect(page.body).toContain(`data-account="${betaId}"`);
      expect(headingOf(page.body)).toBe(beta);
      expect(page.body).toContain("You are member");
      expect(page.body).toContain(`data-member="${ben.email}"`);
      expect(page.body).toContain(`data-member="${pat.email}"`);
      expect(page.body).not.toContain(`data-member="${ada.email}"`);
      // A member sees no invitations, no invite form and no activity log: orgs answered with Pat's role in Beta.
      expect(page.body).not.toContain(`data-invitation="${betaGuest}"`);
      expect(page.body).not.toContain(`data-invitation="${waiting}"`);
      expect(page.body).not.toContain("Send invitations");
      expect(page.body).not.toContain('id="activity"');

      // A form sent by hand as if Pat managed Beta: orgs checks Pat's role in Beta and refuses.
      const refused = await jar.post(`${hatch.baseUrl}/dashboard/org/invite`, {
        csrf: csrfOf(page.body),
        emails: `sneaky-${tag}@example.com`,
        role: "member",
      });
      expect(refused.status).toBe(400);
      const text = await refused.text();
      expect(text).toContain(`Only the owner, admins and managers of ${beta} invite people`);
      expect(headingOf(text)).toBe(beta);
      const betaPeople = await callOk<{ invitations: { email: string }[] }>(benAi, "org_members", { include: "all" });
      expect(betaPeople.invitations.map((i) => i.email)).toEqual([betaGuest]);
      const alphaPeople = await callOk<{ invitations: { email: string }[] }>(adaAi, "org_members", { include: "all" });
      expect(alphaPeople.invitations.map((i) => i.email)).toEqual([waiting]);

      // The switch is the dashboard's view only: the AI still acts in Alpha.
      expect(await patAiAccount()).toContain(`"${alpha}"`);
    });

    test("switched to the personal account: the page says so and switches to either organization", async () => {
      const jar = await signedIn(pat.email);
      await switchTo(jar, /^Personal$/);
      const page = await get(jar, "/dashboard/org");
      expect(page.status).toBe(200);
      expect(page.body).toContain('data-account-kind="personal"');
      expect(headingOf(page.body)).toBe("Your personal account");
      expect(page.body).toContain("The dashboard is showing your personal account.");
      expect(page.body).not.toContain("data-member=");
      expect(page.body).not.toContain("Send invitations");
      expect(page.body).toContain(`Show ${alpha}</button></form> <span class="muted">· you are a manager</span>`);
      expect(page.body).toContain(`Show ${beta}</button></form> <span class="muted">· you are a member</span>`);
      expect(page.body).not.toContain("org_");

      // Each organization's button is the switcher's own form, back to this page.
      const form = new RegExp(
        `<li data-org="${betaId}"><form method="post" action="/dashboard/account"[^>]*><input type="hidden" name="csrf" value="([^"]+)"><input type="hidden" name="account" value="${betaId}"><input type="hidden" name="back" value="/dashboard/org">`,
      ).exec(page.body);
      expect(form).not.toBeNull();
      const switched = await jar.post(`${hatch.baseUrl}/dashboard/account`, {
        csrf: form![1]!,
        account: betaId,
        back: "/dashboard/org",
      });
      expect(switched.status).toBe(303);
      expect(switched.headers.get("location")).toBe("/dashboard/org");
      expect(headingOf((await get(jar, "/dashboard/org")).body)).toBe(beta);
    });

    test("switched back to Alpha, Pat's invitation goes to Alpha, not Beta", async () => {
      const jar = await signedIn(pat.email);
      await switchTo(jar, new RegExp(`^${beta}`));
      await switchTo(jar, new RegExp(`^${alpha}`));
      const page = await get(jar, "/dashboard/org");
      expect(headingOf(page.body)).toBe(alpha);
      const invited = `alpha-new-${tag}@example.com`;
      const sent = await jar.post(`${hatch.baseUrl}/dashboard/org/invite`, {
        csrf: csrfOf(page.body),
        emails: invited,
        role: "member",
      });
      expect(sent.status).toBe(303);
      const alphaPeople = await callOk<{ invitations: { email: string }[] }>(adaAi, "org_members", { include: "all" });
      expect(alphaPeople.invitations.map((i) => i.email).sort()).toEqual([invited, waiting].sort());
      const betaPeople = await callOk<{ invitations: { email: string }[] }>(benAi, "org_members", { include: "all" });
      expect(betaPeople.invitations.map((i) => i.email)).toEqual([betaGuest]);
    });

    test("someone with only a personal account: the page says so, with no organization to switch to", async () => {
      const jar = await signedIn(solo.email);
      const page = await get(jar, "/dashboard/org");
      expect(page.status).toBe(200);
      expect(headingOf(page.body)).toBe("Your personal account");
      expect(page.body).toContain("You are not in an organization.");
      expect(page.body).not.toContain("data-org=");
      expect(page.body).not.toContain(alpha);
    });

    test("removed from Beta, Pat still acts in Alpha, and Beta leaves the switcher", async () => {
      const { client } = await connectFormClient(hatch, ben.accessToken, () => ({
        action: "accept",
        content: { confirm: true },
      }));
      await callOk(client, "org_member_update", { action: "remove", email: pat.email });
      await client.close();
      expect(await patAiAccount()).toContain(`"${alpha}"`);
      const jar = await signedIn(pat.email);
      const page = await get(jar, "/dashboard/org");
      expect(headingOf(page.body)).toBe(alpha);
      expect(accountsOn(page.body).map(([, label]) => label)).toEqual(["Personal", `${alpha} (organization)`]);
    });
  });
}
