import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppsService } from "@hatch/apps";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { and, eq } from "drizzle-orm";
import { aiKeys, outbox } from "../services/apps/src/db/schema.ts";
import { seedApp } from "../services/apps/test/support/seed.ts";
import { accountOf, addAiKey } from "./support/ai.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, connectFormClient, textOf, userWithToken } from "./support/mcp.ts";
import { refused } from "./support/orgs.ts";
import { MODES } from "./support/servers.ts";

// ai_key through the gateway with the SDK's client: the dashboard link for each scope, who may use which scope, bad
// combinations, deleting after the user confirms, and the list of keys each person may see (never a key).

/** ai_key's structured content: address only for an app's key, addedAt the day the text gives. */
type Listed = { scope: string; provider: string; address?: string; addedAt: string; addedBy: string };
type KeyOut = {
  status: string;
  url: string | null;
  keys: Listed[];
  userAction?: { kind: string; url: string | null; message: string };
};
type User = Awaited<ReturnType<typeof userWithToken>>;

for (const mode of MODES) {
  describe(`ai_key (${mode})`, () => {
    let hatch: TestHatch;
    let apps: AppsService;
    let owner: User, admin: User, manager: User, member: User, solo: User;
    let ownerC: Client, adminC: Client, managerC: Client, memberC: Client, soloC: Client;
    const orgApp = `team-ai-${mode}`;
    const soloApp = `solo-ai-${mode}`;

    beforeAll(async () => {
      hatch = await startTestHatch(mode, {
        serviceEnv: { AI_PROVIDERS: "fake=http://127.0.0.1:9/v1,other=http://127.0.0.1:9/v2" },
      });
      apps = hatch.services.get("apps") as AppsService;
      [owner, admin, manager, member, solo] = (await Promise.all(
        ["Olga", "Ada", "Max", "Mia", "Sol"].map((name) => userWithToken(hatch, { name })),
      )) as [User, User, User, User, User];
      [ownerC, adminC, managerC, memberC, soloC] = (await Promise.all(
        [owner, admin, manager, member, solo].map((u) => connectClient(hatch, u.accessToken)),
      )) as [Client, Client, Client, Client, Client];
      const org = await callOk<{ org: { id: string } }>(ownerC, "org_setup", { action: "create", name: `AI ${mode}` });
      for (const [user, role] of [
        [admin, "admin"],
        [manager, "manager"],
        [member, "member"],
      ] as const) {
        await callOk(ownerC, "org_invite", { emails: [user.email], role });
      }
      for (const client of [adminC, managerC, memberC]) {
        const mine = await callOk<{ invitationsForMe: { invitationId: string }[] }>(client, "org");
        await callOk(client, "org_setup", { action: "accept", invitationId: mine.invitationsForMe[0]!.invitationId });
      }
      await seedApp(apps.context, {
        address: orgApp,
        owner: { id: member.id, email: member.email },
        accountId: org.org.id,
        visibility: "org",
        files: { "index.html": "<h1>Team</h1>" },
      });
      await seedApp(apps.context, {
        address: soloApp,
        owner: { id: solo.id, email: solo.email },
        accountId: await accountOf(hatch, solo),
        visibility: "private",
        files: { "index.html": "<h1>Solo</h1>" },
      });
    }, 90_000);
    afterAll(async () => {
      await Promise.all([ownerC, adminC, managerC, memberC, soloC].map((c) => c?.close()));
      await hatch?.stop();
    });

    const page = (query: string) => `${hatch.baseUrl}/dashboard/ai-keys?${query}`;

    test("link gives the dashboard page for each scope", async () => {
      const mine = await callOk<KeyOut>(soloC, "ai_key", { scope: "mine" });
      expect(mine.status).toBe("link");
      expect(mine.url).toBe(page("scope=mine"));
      // The gateway offers the page from the service's open_link user action (URL elicitation:
      // test/mcp-2026-url.e2e.test.ts); the structured content keeps the url alone, as the text gives it.
      expect(mine.userAction).toBeUndefined();
      const company = await callOk<KeyOut>(ownerC, "ai_key", { scope: "company", provider: "fake" });
      expect(company.url).toBe(page("scope=company&provider=fake"));
      // An app's own key: its owner (a plain member) and a manager of its organization.
      for (const client of [memberC, managerC]) {
        const tool = await callOk<KeyOut>(client, "ai_key", { scope: "tool", address: orgApp });
        expect(tool.url).toBe(page(`scope=tool&app=${orgApp}`));
      }
      const text = textOf(await soloC.callTool({ name: "ai_key", arguments: { scope: "tool", address: soloApp } }));
      expect(text).toContain(page(`scope=tool&app=${soloApp}`));
      expect(text).toContain("never ask for the key");
    });

    test("bad combinations and unknown providers are refused with what to send instead", async () => {
      expect(await refused(soloC, "ai_key", { scope: "tool" })).toMatch(/scope tool needs address.*\(invalid_input\)$/);
      expect(await refused(soloC, "ai_key", { scope: "mine", address: soloApp })).toMatch(
        /address is only for scope tool.*\(invalid_input\)$/,
      );
      expect(await refused(soloC, "ai_key", { scope: "mine", provider: "nobody" })).toContain(
        'Hatch does not offer the AI provider "nobody". Known providers: fake, other.',
      );
      expect(await refused(soloC, "ai_key", { scope: "mine", provider: "Not Valid" })).toContain("provider");
      expect(await refused(soloC, "ai_key", { scope: "tool", address: orgApp })).toMatch(
        /You have no app at the address.*\(not_found\)$/,
      );
      expect(await refused(soloC, "ai_key", { scope: "mine", action: "delete" })).toMatch(
        /Give provider.*\(invalid_input\)$/,
      );
      expect(await refused(soloC, "ai_key", { scope: "mine", action: "delete", provider: "fake" })).toMatch(
        /no fake key.*\(not_found\)$/,
      );
    });

    test("company keys: refused in a personal account and to managers and members; owner and admin may", async () => {
      expect(await refused(soloC, "ai_key", { scope: "company" })).toMatch(/only in a company account.*\(forbidden\)$/);
      for (const client of [managerC, memberC]) {
        expect(await refused(client, "ai_key", { scope: "company" })).toMatch(
          /Only the organization's owner or an admin.*\(forbidden\)$/,
        );
      }
      expect((await callOk<KeyOut>(adminC, "ai_key", { scope: "company" })).status).toBe("link");
      // The page's rpc checks the same way.
      await expect(
        addAiKey(hatch, member, { scope: "company", provider: "fake", key: "sk-member-company-1" }),
      ).rejects.toThrow(/owner or an admin/);
      await expect(
        addAiKey(hatch, solo, { scope: "tool", address: orgApp, provider: "fake", key: "sk-solo-tool-0001" }),
      ).rejects.toThrow(/no app at the address/);
    });

    test("the list shows each person the keys they may see, never a key", async () => {
      await addAiKey(hatch, solo, { scope: "mine", provider: "fake", key: "sk-solo-mine-secret-1" });
      await addAiKey(hatch, owner, { scope: "company", provider: "other", key: "sk-company-secret-22" });
      await addAiKey(hatch, member, { scope: "tool", address: orgApp, provider: "fake", key: "sk-team-tool-secret-3" });
      const soloSees = await callOk<KeyOut>(soloC, "ai_key", { scope: "mine" });
      expect(soloSees.keys.map((k) => [k.scope, k.provider, k.address ?? null, k.addedBy])).toEqual([
        ["mine", "fake", null, solo.email],
      ]);
      expect(Date.parse(soloSees.keys[0]!.addedAt)).toBeGreaterThan(0);
      const managerSees = await callOk<KeyOut>(managerC, "ai_key", { scope: "mine" });
      expect(managerSees.keys.map((k) => [k.scope, k.provider, k.address ?? null, k.addedBy])).toEqual([
        ["company", "other", null, owner.email],
        ["tool", "fake", orgApp, member.email],
      ]);
      // A plain member sees the company's key and their own app's, not other members' apps.
      const memberSees = await callOk<KeyOut>(memberC, "ai_key", { scope: "mine" });
      expect(memberSees.keys.map((k) => k.scope)).toEqual(["company", "tool"]);
      for (const result of [soloSees, managerSees, memberSees]) expect(JSON.stringify(result)).not.toContain("secret");
    });

    test("delete asks the user (form), and only a yes deletes, with an event", async () => {
      await addAiKey(hatch, solo, { scope: "mine", provider: "other", key: "sk-solo-other-key-9" });
      let reply: "accept" | "decline" = "decline";
      const form = await connectFormClient(hatch, solo.accessToken, () =>
        reply === "accept" ? { action: "accept", content: { confirm: true } } : { action: "decline" },
      );
      try {
        const declined = await form.client.callTool({
          name: "ai_key",
          arguments: { scope: "mine", action: "delete", provider: "other" },
        });
        expect(declined.isError).toBeFalsy();
        expect(declined.structuredContent).toEqual({ status: "declined" });
        expect(form.asked[0]).toContain("Delete your own other AI key?");
        expect(await keyRows(solo.id)).toEqual(["fake", "other"]);
        reply = "accept";
        const done = await callOk<KeyOut>(form.client, "ai_key", {
          scope: "mine",
          action: "delete",
          provider: "other",
        });
        expect(done.status).toBe("deleted");
        const left = await callOk<KeyOut>(form.client, "ai_key", { scope: "mine" });
        expect(left.keys.map((k) => k.provider)).toEqual(["fake"]);
        expect(await keyRows(solo.id)).toEqual(["fake"]);
        const events = await apps.context.db
          .select({ event: outbox.event })
          .from(outbox)
          .where(eq(outbox.subject, "events.apps.ai_key.deleted"));
        expect(events.map((e) => [e.event.actor?.email, e.event.details])).toEqual([
          [solo.email, { scope: "mine", provider: "other" }],
        ]);
      } finally {
        await form.client.close();
      }
    });

    test("delete without forms: a confirm link, and nothing is deleted until the user confirms there", async () => {
      const result = await soloC.callTool({
        name: "ai_key",
        arguments: { scope: "mine", action: "delete", provider: "fake" },
      });
      expect(result.isError).toBeFalsy();
      const data = result.structuredContent as KeyOut;
      expect(data.status).toBe("needs_user");
      expect(data.userAction?.kind).toBe("open_link");
      expect(data.userAction?.url).toStartWith(`${hatch.baseUrl}/confirm/`);
      expect(await keyRows(solo.id)).toEqual(["fake"]);
    });

    async function keyRows(ownerId: string): Promise<string[]> {
      const rows = await apps.context.db
        .select({ provider: aiKeys.provider })
        .from(aiKeys)
        .where(and(eq(aiKeys.scope, "mine"), eq(aiKeys.ownerId, ownerId)));
      return rows.map((r) => r.provider).sort();
    }
  });
}
