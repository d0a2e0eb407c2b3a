import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppsService } from "@hatch/apps";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { hiddenFields } from "../gateway/test/support.ts";
import { secretStatus } from "../services/apps/src/secrets/store.ts";
import { seedApp } from "../services/apps/test/support/seed.ts";
import { csrfOf, HostCookieJar, signInWithForm } from "./support/cookies.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { joinOrg, verificationLink } from "./support/orgs.ts";
import { MODES } from "./support/servers.ts";

// /dashboard/settings over real HTTP: secrets and AI keys listed by name with Delete (values never on the page, a
// delete asks first), another person's secret not found, the transfer of ownership only by the owner, the person's
// own name and password.

const PASSWORD = "correct horse battery";
const VALUE = "sk-settings-0123456789-NEVER-SHOWN";
const KEY = "sk-ai-key-0123456789-NEVER-SHOWN";
const CONFIG = { apis: { weather: { url: "https://api.weather.example/v1", secret: "WEATHER_KEY" } } };

type User = Awaited<ReturnType<typeof userWithToken>>;

for (const mode of MODES) {
  describe(`dashboard settings (${mode})`, () => {
    let hatch: TestHatch;
    let apps: AppsService;
    let owner: User, manager: User, member: User, stranger: User, admin: User;
    const clients: Client[] = [];
    let ownerAi: Client;
    let appId = "";
    let strangerAppId = "";
    const address = `settings-owner-${mode}`;
    const strangerAddress = `settings-stranger-${mode}`;
    const settings = () => `${hatch.baseUrl}/dashboard/settings`;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      apps = hatch.services.get("apps") as AppsService;
      owner = await userWithToken(hatch, { name: "Olga Owner", email: `settings-owner-${mode}@example.com` });
      manager = await userWithToken(hatch, { name: "Max Manager", email: `settings-manager-${mode}@example.com` });
      member = await userWithToken(hatch, { name: "Mia Member", email: `settings-member-${mode}@example.com` });
      stranger = await userWithToken(hatch, { name: "Sam Stranger", email: `settings-stranger-${mode}@example.com` });
      admin = await userWithToken(hatch, { name: "Ada Admin", email: `settings-admin-${mode}@example.com` });
      ownerAi = await connectClient(hatch, owner.accessToken);
      const managerAi = await connectClient(hatch, manager.accessToken);
      const memberAi = await connectClient(hatch, member.accessToken);
      clients.push(ownerAi, managerAi, memberAi);
      const org = await callOk<{ org: { id: string } }>(ownerAi, "org_setup", {
        action: "create",
        name: `Settings ${mode}`,
      });
      await joinOrg(ownerAi, managerAi, manager.email, { role: "manager" });
      await joinOrg(ownerAi, memberAi, member.email);
      const adminAi = await connectClient(hatch, admin.accessToken);
      clients.push(adminAi);
      await joinOrg(ownerAi, adminAi, admin.email, { role: "admin" });
      const files = { "index.html": "<h1>Weather</h1>" };
      appId = (
        await seedApp(apps.context, {
          owner: { id: owner.id, email: owner.email },
          accountId: org.org.id,
          visibility: "org",
          address,
          name: "Weather",
          files,
          config: CONFIG,
        })
      ).id;
      strangerAppId = (
        await seedApp(apps.context, {
          owner: { id: stranger.id, email: stranger.email },
          visibility: "private",
          address: strangerAddress,
          name: "Theirs",
          files,
          config: CONFIG,
        })
      ).id;
    }, 90_000);
    afterAll(async () => {
      for (const client of clients) await client.close();
      await hatch?.stop();
    });

    async function signedIn(user: User, password = PASSWORD): Promise<HostCookieJar> {
      const jar = new HostCookieJar();
      await signInWithForm(jar, `${hatch.baseUrl}/signin`, user.email, password);
      return jar;
    }

    /** Sets a secret the way its owner does: the secret page's form, then its confirm of the destinations. */
    async function setSecret(user: User, at: string): Promise<void> {
      const jar = await signedIn(user);
      const path = `${hatch.baseUrl}/dashboard/apps/${at}/secrets/WEATHER_KEY`;
      const saved = await jar.post(path, { ...hiddenFields(await (await jar.fetch(path)).text()), value: VALUE });
      expect(saved.status).toBe(303);
    }

    /** Presses Confirm on the confirm step a form led to; returns the answer. */
    async function confirm(jar: HostCookieJar, step: Response): Promise<Response> {
      expect(step.status).toBe(200);
      const page = await step.text();
      expect(page).toContain("Please confirm");
      // A question's choices keep what the page chose (e.g. who receives the apps of someone leaving).
      const chosen = Object.fromEntries(
        [...page.matchAll(/<select name="([^"]+)">[\s\S]*?<option value="([^"]*)" selected>/g)].map((m) => [
          m[1],
          m[2],
        ]),
      );
      return jar.post(`${hatch.baseUrl}/dashboard/confirm`, { ...hiddenFields(page), ...chosen, action: "confirm" });
    }

    test("secrets: listed by name, never by value; a delete asks first; another person's is not found", async () => {
      await setSecret(owner, address);
      await setSecret(stranger, strangerAddress);
      const jar = await signedIn(owner);
      const page = await (await jar.fetch(settings())).text();
      expect(page).toContain(`data-secret="${address}/WEATHER_KEY"`);
      expect(page).not.toContain(VALUE);
      expect(page).not.toContain(strangerAddress);
      const csrf = csrfOf(page);

      // The stranger's secret, by its address: not found, and it stays.
      const theirs = await jar.post(`${settings()}/secrets/delete`, {
        csrf,
        address: strangerAddress,
        name: "WEATHER_KEY",
      });
      expect(theirs.status).toBe(404);
      expect(await theirs.text()).toContain(`You have no app at the address &quot;${strangerAddress}&quot;`);
      expect((await secretStatus(apps.context.db, strangerAppId, "WEATHER_KEY")).isSet).toBe(true);

      const step = await jar.post(`${settings()}/secrets/delete`, { csrf, address, name: "WEATHER_KEY" });
      expect((await secretStatus(apps.context.db, appId, "WEATHER_KEY")).isSet).toBe(true);
      const deleted = await confirm(jar, step);
      expect(deleted.status).toBe(303);
      expect(deleted.headers.get("location")).toBe("/dashboard/settings");
      expect((await secretStatus(apps.context.db, appId, "WEATHER_KEY")).isSet).toBe(false);
      const after = await (await jar.fetch(settings())).text();
      expect(after).toContain(`data-secret="${address}/WEATHER_KEY"`);
      expect(after).toContain("not set");
    }, 60_000);

    test("AI keys: listed by provider, never the key; a member cannot delete the organization's; the owner can", async () => {
      const ownerJar = await signedIn(owner);
      const keyPage = `${hatch.baseUrl}/dashboard/ai-keys?scope=company`;
      const form = await (await ownerJar.fetch(keyPage)).text();
      const provider = /<option value="([a-z0-9-]+)"/.exec(form)?.[1] ?? "";
      expect(provider).not.toBe("");
      expect((await ownerJar.post(keyPage, { csrf: csrfOf(form), provider, key: KEY })).status).toBe(303);

      const listed = await (await ownerJar.fetch(settings())).text();
      expect(listed).toContain(`data-key="company/${provider}"`);
      expect(listed).not.toContain(KEY);

      const memberJar = await signedIn(member);
      const memberPage = await (await memberJar.fetch(settings())).text();
      expect(memberPage).not.toContain(KEY);
      const refused = await memberJar.post(`${settings()}/ai-keys/delete`, {
        csrf: csrfOf(memberPage),
        scope: "company",
        provider,
      });
      expect(refused.status).toBe(403);
      expect((await (await ownerJar.fetch(settings())).text()).includes(`data-key="company/${provider}"`)).toBe(true);

      const step = await ownerJar.post(`${settings()}/ai-keys/delete`, {
        csrf: csrfOf(listed),
        scope: "company",
        provider,
      });
      expect((await confirm(ownerJar, step)).status).toBe(303);
      expect(await (await ownerJar.fetch(settings())).text()).not.toContain(`data-key="company/${provider}"`);
    }, 60_000);

    test("leaving: an admin leaves after the question; a member is told whom to ask; the owner must transfer first", async () => {
      const memberPage = await (await (await signedIn(member)).fetch(settings())).text();
      expect(memberPage).not.toContain(`action="/dashboard/settings/leave"`);
      expect(memberPage).toContain("ask its owner, an admin or a manager to remove you");
      const ownerPage = await (await (await signedIn(owner)).fetch(settings())).text();
      expect(ownerPage).not.toContain(`action="/dashboard/settings/leave"`);

      const jar = await signedIn(admin);
      const page = await (await jar.fetch(settings())).text();
      expect(page).toContain(`action="/dashboard/settings/leave"`);
      const step = await jar.post(`${settings()}/leave`, { csrf: csrfOf(page) });
      const members = async () =>
        (await callOk<{ members: { email: string }[] }>(ownerAi, "org_members", { include: "members" })).members.map(
          (m) => m.email,
        );
      expect(await members()).toContain(admin.email);
      const left = await confirm(jar, step);
      expect(left.status).toBe(303);
      expect(left.headers.get("location")).toBe("/dashboard/settings");
      expect(await members()).not.toContain(admin.email);
    }, 60_000);

    test("name and password: a wrong current password changes nothing; a new one signs out the other browsers", async () => {
      const jar = await signedIn(member);
      const other = await signedIn(member);
      const page = await (await jar.fetch(settings())).text();
      const renamed = await jar.post(`${settings()}/name`, { csrf: csrfOf(page), name: "Mia M. Member" });
      expect(renamed.status).toBe(303);
      expect(await (await jar.fetch(settings())).text()).toContain('value="Mia M. Member"');
      // The organization knows the new name from the person's next call on (that page load was one).
      const listed = await callOk<{ members: { email: string; name: string }[] }>(ownerAi, "org_members", {
        include: "members",
      });
      expect(listed.members.find((m) => m.email === member.email)?.name).toBe("Mia M. Member");
      const empty = await jar.post(`${settings()}/name`, { csrf: csrfOf(page), name: "  " });
      expect(empty.status).toBe(400);

      const wrong = await jar.post(`${settings()}/password`, {
        csrf: csrfOf(page),
        current: "not my password",
        password: "a brand new password",
      });
      expect(wrong.status).toBe(400);
      expect(await wrong.text()).toContain("Your current password is not right");
      const changed = await jar.post(`${settings()}/password`, {
        csrf: csrfOf(page),
        current: PASSWORD,
        password: "a brand new password",
      });
      expect(changed.status).toBe(303);
      // This browser stays signed in; the other one is signed out.
      expect((await jar.fetch(settings())).status).toBe(200);
      expect((await other.fetch(settings())).status).toBe(303);
      await signedIn(member, "a brand new password");
    }, 60_000);

    test("ten wrong current passwords in an hour: then even the right one is refused", async () => {
      const guessed = await userWithToken(hatch, { name: "Gus", email: `settings-guessed-${mode}@example.com` });
      const jar = await signedIn(guessed);
      const csrf = csrfOf(await (await jar.fetch(settings())).text());
      const change = (current: string) =>
        jar.post(`${settings()}/password`, { csrf, current, password: "another new password" });
      for (let i = 0; i < 10; i++) expect((await change(`guess ${i}`)).status).toBe(400);
      const right = await change(PASSWORD);
      expect(right.status).toBe(400);
      expect(await right.text()).toContain("after 10 wrong tries an hour, wait");
      await signedIn(guessed);
    }, 60_000);

    test("email change: the password first; a taken address is refused; the mailed link moves the account", async () => {
      const jar = await signedIn(stranger);
      const page = await (await jar.fetch(settings())).text();
      const fresh = `settings-renamed-${mode}@example.com`;
      const wrong = await jar.post(`${settings()}/email`, { csrf: csrfOf(page), email: fresh, current: "nope" });
      expect(wrong.status).toBe(400);
      expect(await wrong.text()).toContain(`value="${fresh}"`);
      const taken = await jar.post(`${settings()}/email`, {
        csrf: csrfOf(page),
        email: owner.email,
        current: PASSWORD,
      });
      expect(taken.status).toBe(400);
      expect(await taken.text()).toContain(`Another Hatch account has ${owner.email}`);
      const asked = await jar.post(`${settings()}/email`, { csrf: csrfOf(page), email: fresh, current: PASSWORD });
      expect(asked.status).toBe(303);
      // Nothing changes until the link is opened.
      expect(await (await jar.fetch(settings())).text()).toContain(`<strong>${stranger.email}</strong>`);
      const link = await verificationLink(hatch, fresh);
      const opened = await jar.fetch(link);
      expect(opened.status).toBe(200);
      expect(await opened.text()).toContain(`Your account's email is now <strong>${fresh}</strong>`);
      // Twice: the account no longer has the address the link was made from.
      expect((await jar.fetch(link)).status).toBe(409);
      await signedIn({ ...stranger, email: fresh });
      const strangerAi = await connectClient(hatch, stranger.accessToken);
      clients.push(strangerAi);
      expect(JSON.stringify(await callOk(strangerAi, "whoami"))).toContain(fresh);
    }, 60_000);

    test("renaming the organization: the owner and admins; a manager is refused and the name stays", async () => {
      const managerJar = await signedIn(manager);
      const managerPage = await (await managerJar.fetch(settings())).text();
      expect(managerPage).not.toContain(`action="/dashboard/settings/rename"`);
      const refused = await managerJar.post(`${settings()}/rename`, {
        csrf: csrfOf(managerPage),
        orgName: "Taken Over",
      });
      expect(refused.status).toBe(403);
      const nameOf = async () => (await callOk<{ org: { name: string } }>(ownerAi, "org")).org.name;
      expect(await nameOf()).toBe(`Settings ${mode}`);
      const jar = await signedIn(owner);
      const page = await (await jar.fetch(settings())).text();
      const empty = await jar.post(`${settings()}/rename`, { csrf: csrfOf(page), orgName: " " });
      expect(empty.status).toBe(400);
      expect(await empty.text()).toContain("Enter the organization&#39;s name.");
      const renamed = await jar.post(`${settings()}/rename`, { csrf: csrfOf(page), orgName: `Renamed ${mode}` });
      expect(renamed.status).toBe(303);
      expect(await nameOf()).toBe(`Renamed ${mode}`);
    }, 60_000);

    test("transfer of ownership: not by a manager; the owner's needs the box ticked, then the member is the owner", async () => {
      const managerJar = await signedIn(manager);
      const managerPage = await (await managerJar.fetch(settings())).text();
      expect(managerPage).not.toContain(`action="/dashboard/settings/transfer"`);
      const forbidden = await managerJar.post(`${settings()}/transfer`, {
        csrf: csrfOf(managerPage),
        email: manager.email,
        sure: "yes",
      });
      expect(forbidden.status).toBe(403);
      expect(await forbidden.text()).toContain("Only the owner");

      const ownerJar = await signedIn(owner);
      const ownerPage = await (await ownerJar.fetch(settings())).text();
      expect(ownerPage).toContain(`action="/dashboard/settings/transfer"`);
      const unticked = await ownerJar.post(`${settings()}/transfer`, { csrf: csrfOf(ownerPage), email: manager.email });
      expect(unticked.status).toBe(400);
      const who = async () => callOk<{ org: { owner: string } }>(ownerAi, "org");
      expect((await who()).org.owner).toBe(owner.email);
      const done = await ownerJar.post(`${settings()}/transfer`, {
        csrf: csrfOf(ownerPage),
        email: manager.email,
        sure: "yes",
      });
      expect(done.status).toBe(303);
      expect((await who()).org.owner).toBe(manager.email);
    }, 60_000);
  });
}
