import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppsService } from "@hatch/apps";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { eq } from "drizzle-orm";
import { appsTable, outbox } from "../services/apps/src/db/schema.ts";
import { seedApp } from "../services/apps/test/support/seed.ts";
import { addAiKey } from "./support/ai.ts";
import { startFakeAiProvider, type FakeAiProvider } from "./support/fake-ai-provider.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, connectFormClient, textOf, userWithToken } from "./support/mcp.ts";
import { outboxMails } from "./support/orgs.ts";
import { MODES } from "./support/servers.ts";

// A change of owner never leaves a person's own AI key paying for an app they no longer stand behind. Removing a
// member moves their apps: a `mine` choice on them is kept only when its payer is the new owner, else it becomes
// the organization's key (when it has one) or none; and the removed member's key stops paying for apps others own.
// Which key reached the provider is read off a local OpenAI-compatible fake; the new owner learns it by mail, the
// manager who removed the member from the tool's answer.

const MIA_KEY = "sk-mia-own-key-000000001";
const MAX_KEY = "sk-max-own-key-000000002";
const COMPANY_KEY = "sk-company-key-000000003";

type User = Awaited<ReturnType<typeof userWithToken>>;
type Removed = { status: string; appsToMove: { address: string }[]; appsRecipient: string };

for (const mode of MODES) {
  describe(`AI key choice across a change of owner (${mode})`, () => {
    let hatch: TestHatch;
    let apps: AppsService;
    let fake: FakeAiProvider;
    let boss: User, mia: User, max: User, mo: User;
    let bossForms: Awaited<ReturnType<typeof connectFormClient>>;
    let miaC: Client, maxC: Client, moC: Client;
    let recipient = "";
    let orgId = "";
    // Mia's own app paid by her key; Mia's app whose manager Max chose his own key; Mo's app Max also pays for.
    const miaApp = `mia-ai-${mode}`;
    const maxPays = `max-pays-${mode}`;
    const moApp = `mo-ai-${mode}`;
    const origin = (address: string) => hatch.appHostUrl.replace("//", `//${address}.`);

    /**
     * One AI call of the app (hatch.ai.chat, what its pages and its server code's env.ai.chat both go through); what
     * came back and the key the provider saw, if any reached it.
     */
    async function aiCall(address: string) {
      const before = fake.requests.length;
      const response = await fetch(`${origin(address)}/_hatch/ai/chat`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: origin(address) },
        body: JSON.stringify({ model: "fake-small", messages: [{ role: "user", content: "hi" }] }),
      });
      const body = (await response.json()) as { content?: string; error?: { message: string } };
      const text = body.content ?? body.error?.message ?? "";
      const sent = fake.requests.slice(before).map((r) => r.authorization);
      return { status: response.status, text, keys: sent };
    }

    async function choiceOf(address: string) {
      const [row] = await apps.context.db
        .select({ choice: appsTable.aiChoice, payer: appsTable.aiPayerId, owner: appsTable.ownerId })
        .from(appsTable)
        .where(eq(appsTable.address, address));
      return row;
    }

    /** The mails to `email` besides their invitation. */
    const aiMailsTo = async (email: string) =>
      (await outboxMails(hatch)).filter((m) => m.to === email.toLowerCase() && !m.subject.includes("invited you"));

    async function remove(email: string, to: string): Promise<{ data: Removed; text: string }> {
      recipient = to;
      const result = await bossForms.client.callTool({
        name: "org_member_update",
        arguments: { email, action: "remove" },
      });
      if (result.isError) throw new Error(textOf(result));
      return { data: result.structuredContent as Removed, text: textOf(result) };
    }

    beforeAll(async () => {
      fake = startFakeAiProvider();
      for (const key of [MIA_KEY, MAX_KEY, COMPANY_KEY]) fake.keys.add(key);
      hatch = await startTestHatch(mode, { serviceEnv: { AI_PROVIDERS: `fake=${fake.baseUrl}` } });
      apps = hatch.services.get("apps") as AppsService;
      [boss, mia, max, mo] = (await Promise.all(
        ["Bo Boss", "Mia Member", "Max Manager", "Mo Member"].map((name) => userWithToken(hatch, { name })),
      )) as [User, User, User, User];
      bossForms = await connectFormClient(hatch, boss.accessToken, () => ({
        action: "accept",
        content: { appsRecipient: recipient },
      }));
      [miaC, maxC, moC] = (await Promise.all([mia, max, mo].map((u) => connectClient(hatch, u.accessToken)))) as [
        Client,
        Client,
        Client,
      ];
      const org = await callOk<{ org: { id: string } }>(bossForms.client, "org_setup", {
        action: "create",
        name: `AI owners ${mode}`,
      });
      orgId = org.org.id;
      for (const [user, client, role] of [
        [mia, miaC, "member"],
        [max, maxC, "manager"],
        [mo, moC, "member"],
      ] as const) {
        await callOk(bossForms.client, "org_invite", { emails: [user.email], role });
        const mine = await callOk<{ invitationsForMe: { invitationId: string }[] }>(client, "org");
        await callOk(client, "org_setup", { action: "accept", invitationId: mine.invitationsForMe[0]!.invitationId });
      }
      const files = { "index.html": "<h1>AI</h1>" };
      for (const [address, owner] of [
        [miaApp, mia],
        [maxPays, mia],
        [moApp, mo],
      ] as const) {
        await seedApp(apps.context, {
          address,
          owner: { id: owner.id, email: owner.email, name: owner.name },
          accountId: orgId,
          visibility: "public",
          files,
        });
      }
      await addAiKey(hatch, mia, { scope: "mine", provider: "fake", key: MIA_KEY });
      await addAiKey(hatch, max, { scope: "mine", provider: "fake", key: MAX_KEY });
      // Public apps: every choice that spends someone's key asks for the cost to be accepted.
      await callOk(miaC, "tool_ai", { address: miaApp, value: "mine", acceptCost: true });
      for (const address of [maxPays, moApp])
        await callOk(maxC, "tool_ai", { address, value: "mine", acceptCost: true });
    }, 120_000);
    afterAll(async () => {
      await Promise.all([bossForms?.client, miaC, maxC, moC].map((c) => c?.close()));
      await hatch?.stop();
      await fake?.stop();
    });

    test("before any change each app spends the key its payer chose", async () => {
      expect(await aiCall(miaApp)).toEqual({ status: 200, text: "echo: hi", keys: [`Bearer ${MIA_KEY}`] });
      expect((await aiCall(maxPays)).keys).toEqual([`Bearer ${MAX_KEY}`]);
      expect((await aiCall(moApp)).keys).toEqual([`Bearer ${MAX_KEY}`]);
    });

    test("a removed member's apps stop spending her key: without a company key AI is off; the new owner is mailed", async () => {
      const removed = await remove(mia.email, max.email);
      expect(removed.data.status).toBe("removed");
      expect(removed.data.appsToMove.map((a) => a.address).sort()).toEqual([maxPays, miaApp].sort());

      // Her key pays no more: the call is refused before any provider is asked.
      const after = await aiCall(miaApp);
      expect(after.status).toBe(403);
      expect(after.text).toContain("AI calls are off for this app");
      expect(after.keys).toEqual([]);
      expect(await choiceOf(miaApp)).toEqual({ choice: "none", payer: null, owner: max.id });
      // Max chose his own key for the other app and now owns it: that choice stands.
      expect((await aiCall(maxPays)).keys).toEqual([`Bearer ${MAX_KEY}`]);
      expect(await choiceOf(maxPays)).toEqual({ choice: "mine", payer: max.id, owner: max.id });

      // The manager who removed her reads it in the answer; the new owner in a mail.
      expect(removed.text).toContain(`${miaApp}: AI calls are off`);
      expect(removed.text).not.toContain(`${maxPays}: AI`);
      const mails = await aiMailsTo(max.email);
      expect(mails).toHaveLength(1);
      expect(mails[0]!.subject).toBe(`AI calls of your apps in AI owners ${mode} changed`);
      expect(mails[0]!.body).toContain(miaApp);
      expect(mails[0]!.body).toContain("AI calls are off");
      expect(mails[0]!.body).not.toContain(maxPays);
      for (const mail of await outboxMails(hatch)) expect(mail.body).not.toContain(MIA_KEY);
    });

    test("with a company key the organization pays; the removed member's key stops paying for apps others own", async () => {
      await addAiKey(hatch, boss, { scope: "company", provider: "fake", key: COMPANY_KEY });
      const removed = await remove(max.email, mo.email);
      // maxPays moved to Mo (Max's key was its payer); moApp stays Mo's, but Max's key paid for it.
      expect(removed.data.appsToMove.map((a) => a.address).sort()).toEqual([maxPays, miaApp].sort());
      for (const address of [maxPays, moApp]) {
        expect(await aiCall(address)).toEqual({
          status: 200,
          text: "echo: hi",
          keys: [`Bearer ${COMPANY_KEY}`],
        });
        expect(await choiceOf(address)).toEqual({ choice: "company", payer: null, owner: mo.id });
      }
      // miaApp was off already and moves as it is.
      expect(await choiceOf(miaApp)).toEqual({ choice: "none", payer: null, owner: mo.id });

      expect(removed.text).toContain(`${maxPays}: AI calls now use the organization's key`);
      expect(removed.text).toContain(`${moApp}: AI calls now use the organization's key`);
      const mails = await aiMailsTo(mo.email);
      expect(mails).toHaveLength(1);
      expect(mails[0]!.body).toContain(maxPays);
      expect(mails[0]!.body).toContain(moApp);
      expect(mails[0]!.body).not.toContain(miaApp);
      expect(mails[0]!.body).toContain("the organization's AI key");
      // Each reset is an app event, so the organization's activity log shows it.
      const events = await apps.context.db
        .select({ event: outbox.event })
        .from(outbox)
        .where(eq(outbox.subject, "events.apps.app.ai_choice_changed"));
      const resets = events.map((e) => e.event).filter((e) => e.details.reason);
      expect(resets.map((e) => [e.app, e.details.from, e.details.to]).sort()).toEqual(
        [
          [miaApp, "mine", "none"],
          [maxPays, "mine", "company"],
          [moApp, "mine", "company"],
        ].sort(),
      );
    });
  });
}
