import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppsService } from "@hatch/apps";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  AccountAppsSchema,
  AccountLeftSchema,
  deriveKey,
  LocalActResultSchema,
  rpcMethods,
  type CallContextClaims,
} from "@hatch/contracts";
import { callRpc } from "@hatch/platform";
import { and, eq } from "drizzle-orm";
import { addresses, aiKeys, appsTable } from "../services/apps/src/db/schema.ts";
import { seedApp } from "../services/apps/test/support/seed.ts";
import { accounts, activity, members, people } from "../services/orgs/src/db/schema.ts";
import { csrfOf, HostCookieJar, signedInJar } from "./support/cookies.ts";
import { eventually } from "./support/eventually.ts";
import { gatewaySignedContext } from "./support/call-context.ts";
import { startTestHatch, TEST_SECRET, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { joinOrg } from "./support/orgs.ts";
import { MODES } from "./support/servers.ts";

// Deleting one's account on /dashboard/settings/delete over real HTTP: refused (nothing changed) for the owner of an
// organization with members, a wrong password, a wrong email typed, a missing CSRF field; done for a member with two
// personal apps, an AI key and an app in the organization: the apps answer 404 with their addresses kept, the org app
// moves to the owner, the activity log says so, the access token and the password stop working, the email signs up anew.

const PASSWORD = "correct horse battery";
const KEY = "sk-delete-account-0123456789-NEVER-SHOWN";
type User = Awaited<ReturnType<typeof userWithToken>>;

for (const mode of MODES) {
  describe(`account deletion (${mode})`, () => {
    let hatch: TestHatch;
    let apps: AppsService;
    let owner: User, dan: User;
    const clients: Client[] = [];
    let orgId = "";
    const personal = [`gone-one-${mode}`, `gone-two-${mode}`];
    const inOrg = `stays-in-org-${mode}`;
    const origin = (address: string) => hatch.appHostUrl.replace("//", `//${address}.`);
    const deletePath = () => `${hatch.baseUrl}/dashboard/settings/delete`;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      apps = hatch.services.get("apps") as AppsService;
      owner = await userWithToken(hatch, { name: "Olga Owner", email: `del-owner-${mode}@example.com` });
      dan = await userWithToken(hatch, { name: "Dan Leaving", email: `del-dan-${mode}@example.com` });
      const ownerAi = await connectClient(hatch, owner.accessToken);
      const danAi = await connectClient(hatch, dan.accessToken);
      clients.push(ownerAi, danAi);
      orgId = (await callOk<{ org: { id: string } }>(ownerAi, "org_setup", { action: "create", name: `Del ${mode}` }))
        .org.id;
      await joinOrg(ownerAi, danAi, dan.email);
      const orgsDb = hatch.databases.get("orgs")!;
      const [own] = await orgsDb
        .select({ id: accounts.id })
        .from(members)
        .innerJoin(accounts, eq(accounts.id, members.accountId))
        .where(and(eq(members.userId, dan.id), eq(accounts.kind, "personal")));
      const files = { "index.html": "<h1>Hello</h1>" };
      for (const address of personal)
        await seedApp(apps.context, {
          owner: { id: dan.id, email: dan.email },
          accountId: own!.id,
          visibility: "public",
          address,
          files,
        });
      await seedApp(apps.context, {
        owner: { id: dan.id, email: dan.email },
        accountId: orgId,
        visibility: "public",
        address: inOrg,
        files,
      });
      // Dan's own AI key, typed on the AI keys page.
      const jar = await signedIn(dan);
      const keyPage = `${hatch.baseUrl}/dashboard/ai-keys?scope=mine`;
      const form = await (await jar.fetch(keyPage)).text();
      const provider = /<option value="([a-z0-9-]+)"/.exec(form)?.[1] ?? "";
      expect((await jar.post(keyPage, { csrf: csrfOf(form), provider, key: KEY })).status).toBe(303);
    }, 90_000);
    afterAll(async () => {
      for (const client of clients) await client.close().catch(() => {});
      await hatch?.stop();
    });

    const signedIn = (user: User) => signedInJar(hatch.baseUrl, user.email, PASSWORD);

    async function unchanged(): Promise<void> {
      await signedIn(dan);
      for (const address of [...personal, inOrg]) expect((await fetch(origin(address))).status).toBe(200);
      const [key] = await apps.context.db.select().from(aiKeys).where(eq(aiKeys.ownerId, dan.id));
      expect(key).toBeTruthy();
    }

    test("refused: the owner of an organization with members, wrong password, wrong email, no CSRF", async () => {
      const ownerJar = await signedIn(owner);
      const ownerPage = await (await ownerJar.fetch(deletePath())).text();
      expect(ownerPage).toContain(`You own Del ${mode}, which has 1 other member`);
      expect(ownerPage).toContain("/dashboard/settings");
      expect(ownerPage).not.toContain("Delete my account");
      const forced = await ownerJar.post(deletePath(), {
        csrf: csrfOf(ownerPage),
        current: PASSWORD,
        email: owner.email,
      });
      expect(forced.status).toBe(409);
      await signedIn(owner);

      const jar = await signedIn(dan);
      const page = await (await jar.fetch(deletePath())).text();
      expect(page).toContain(personal[0]!);
      expect(page).toContain(personal[1]!);
      expect(page).toContain(`You leave Del ${mode}`);
      expect(page).toContain(owner.email);
      expect(page).not.toContain(KEY);
      const csrf = csrfOf(page);
      const wrongPassword = await jar.post(deletePath(), { csrf, current: "not the password", email: dan.email });
      expect(wrongPassword.status).toBe(400);
      expect(await wrongPassword.text()).toContain("Your current password is not right");
      const wrongEmail = await jar.post(deletePath(), { csrf, current: PASSWORD, email: owner.email });
      expect(wrongEmail.status).toBe(400);
      expect(await wrongEmail.text()).toContain("Type your email");
      const noCsrf = await jar.post(deletePath(), { current: PASSWORD, email: dan.email });
      expect(noCsrf.status).toBe(403);
      await unchanged();
    }, 60_000);

    test("refused: a paid plan (cancel first); a service refuses a ctx that is not the person being deleted", async () => {
      const paula = await userWithToken(hatch, { name: "Paula Paying", email: `del-paula-${mode}@example.com` });
      const claims: CallContextClaims = {
        sub: paula.id,
        email: paula.email,
        name: paula.name,
        permissions: [],
        scope: "write",
        client: { kind: "other", name: "dashboard", elicitation: { form: false, url: false } },
        grant: paula.grantId,
        rid: "test",
      };
      const ctx = await gatewaySignedContext(hatch.gateway, deriveKey(TEST_SECRET, "ctx"), claims);
      const paid = await callRpc(
        hatch.bus,
        "billing",
        rpcMethods.billing.localAct,
        { action: "checkout", card: "ok", plan: "pro" },
        LocalActResultSchema,
        { ctx },
      );
      expect(paid.ok).toBe(true);
      const jar = await signedIn(paula);
      const page = await eventually(async () => {
        const text = await (await jar.fetch(deletePath())).text();
        return text.includes("paid pro plan") ? text : undefined;
      }, "the delete page to see the paid plan");
      expect(page).toContain("/dashboard/billing");
      expect(page).not.toContain("Delete my account");

      // Paula's signed ctx cannot delete Dan, in either service.
      const input = { userId: dan.id, accountIds: [orgId] };
      for (const [service, method, schema] of [
        ["apps", rpcMethods.apps.accountDelete, AccountAppsSchema],
        ["orgs", rpcMethods.orgs.accountDelete, AccountLeftSchema],
      ] as const)
        await expect(callRpc(hatch.bus, service, method, input, schema, { ctx })).rejects.toMatchObject({
          code: "forbidden",
        });
      await unchanged();
    }, 60_000);

    test("a retry after a partial failure finishes the job", async () => {
      const rita = await userWithToken(hatch, { name: "Rita Retry", email: `del-rita-${mode}@example.com` });
      const ctx = await gatewaySignedContext(hatch.gateway, deriveKey(TEST_SECRET, "ctx"), {
        sub: rita.id,
        email: rita.email,
        name: rita.name,
        permissions: [],
        scope: "write",
        client: { kind: "other", name: "dashboard", elicitation: { form: false, url: false } },
        grant: rita.grantId,
        rid: "test",
      });
      const [own] = await hatch.databases
        .get("orgs")!
        .select({ id: members.accountId })
        .from(members)
        .where(eq(members.userId, rita.id));
      const address = `retry-${mode}`;
      await seedApp(apps.context, { owner: { id: rita.id, email: rita.email }, accountId: own!.id, address });
      // The apps part ran, then the rest failed: the apps are gone, the person still signs in.
      const first = await callRpc(
        hatch.bus,
        "apps",
        rpcMethods.apps.accountDelete,
        { userId: rita.id, accountIds: [own!.id] },
        AccountAppsSchema,
        { ctx },
      );
      expect(first.apps.map((a) => a.address)).toEqual([address]);
      const jar = await signedIn(rita);
      const page = await (await jar.fetch(deletePath())).text();
      expect(page).toContain("You have no apps of your own to delete.");
      const done = await jar.post(deletePath(), { csrf: csrfOf(page), current: PASSWORD, email: rita.email });
      expect(done.status).toBe(200);
      const signin = new HostCookieJar();
      const form = await (await signin.fetch(`${hatch.baseUrl}/signin`)).text();
      expect(
        (await signin.post(`${hatch.baseUrl}/signin`, { csrf: csrfOf(form), email: rita.email, password: PASSWORD }))
          .status,
      ).not.toBe(303);
    }, 60_000);

    test("done: apps gone with addresses kept, the org app moves to the owner, token and password refused", async () => {
      const jar = await signedIn(dan);
      const page = await (await jar.fetch(deletePath())).text();
      const done = await jar.post(deletePath(), { csrf: csrfOf(page), current: PASSWORD, email: dan.email });
      expect(done.status).toBe(200);
      expect(await done.text()).toContain("Your account is deleted");

      for (const address of personal) {
        expect((await fetch(origin(address))).status).toBe(404);
        const [kept] = await apps.context.db.select().from(addresses).where(eq(addresses.address, address));
        expect(kept?.appId).toBeNull();
      }
      const [moved] = await apps.context.db.select().from(appsTable).where(eq(appsTable.address, inOrg));
      expect(moved?.ownerId).toBe(owner.id);
      expect((await fetch(origin(inOrg))).status).toBe(200);
      expect(await apps.context.db.select().from(aiKeys).where(eq(aiKeys.ownerId, dan.id))).toEqual([]);

      const orgsDb = hatch.databases.get("orgs")!;
      expect(await orgsDb.select().from(people).where(eq(people.userId, dan.id))).toEqual([]);
      const left = await eventually(async () => {
        const [row] = await orgsDb
          .select()
          .from(activity)
          .where(and(eq(activity.accountId, orgId), eq(activity.action, "member.left")));
        return row;
      }, "member.left in the organization's activity log");
      expect(left.summary).toContain(`deleted their Hatch account and left Del ${mode}; 1 app moved to ${owner.email}`);

      // The AI client is disconnected, the browser signed out, the password refused.
      const mcp = await fetch(hatch.mcpUrl, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${dan.accessToken}`,
          "Content-Type": "application/json",
          Accept: "application/json, text/event-stream",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      expect(mcp.status).toBe(401);
      expect((await jar.fetch(`${hatch.baseUrl}/dashboard/settings`)).status).toBe(303);
      const signin = new HostCookieJar();
      const form = await (await signin.fetch(`${hatch.baseUrl}/signin`)).text();
      const tried = await signin.post(`${hatch.baseUrl}/signin`, {
        csrf: csrfOf(form),
        email: dan.email,
        password: PASSWORD,
      });
      expect(tried.status).not.toBe(303);

      // The email can sign up anew.
      const again = await hatch.gateway.auth.createUser({ email: dan.email, password: PASSWORD, name: "Dan Again" });
      expect(again.id).not.toBe(dan.id);
    }, 60_000);
  });
}
