import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppsService } from "@hatch/apps";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { eq } from "drizzle-orm";
import { appsTable, outbox } from "../services/apps/src/db/schema.ts";
import { seedApp } from "../services/apps/test/support/seed.ts";
import { accountOf, addAiKey } from "./support/ai.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, connectFormClient, textOf, userWithToken } from "./support/mcp.ts";
import { refused } from "./support/orgs.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

// tool_ai through the gateway: each value, the cost warning and the user's own yes whenever the choice makes someone
// pay for other people's AI calls (a form, or for clients without forms the AI asks and calls again with acceptCost).

type AiOut = {
  status: string;
  address: string;
  value: string;
  keyAvailable: boolean;
  costWarning: string | null;
  userAction?: { kind: string; fields: string[]; message: string };
};
type User = Awaited<ReturnType<typeof userWithToken>>;

for (const mode of EMBEDDED_MODES) {
  describe(`tool_ai (${mode})`, () => {
    let hatch: TestHatch;
    let apps: AppsService;
    let solo: User, boss: User, manager: User, member: User, stranger: User;
    let soloC: Client, bossC: Client, managerC: Client, memberC: Client, strangerC: Client;
    const priv = `priv-ai-${mode}`;
    const pub = `pub-ai-${mode}`;
    const team = `team-tool-ai-${mode}`;
    const memberPrivate = `member-priv-ai-${mode}`;

    beforeAll(async () => {
      hatch = await startTestHatch(mode, { serviceEnv: { AI_PROVIDERS: "fake=http://127.0.0.1:9/v1" } });
      apps = hatch.services.get("apps") as AppsService;
      [solo, boss, manager, member, stranger] = (await Promise.all(
        ["Sol", "Bo", "Max", "Mia", "Stan"].map((name) => userWithToken(hatch, { name })),
      )) as [User, User, User, User, User];
      [soloC, bossC, managerC, memberC, strangerC] = (await Promise.all(
        [solo, boss, manager, member, stranger].map((u) => connectClient(hatch, u.accessToken)),
      )) as [Client, Client, Client, Client, Client];
      const org = await callOk<{ org: { id: string } }>(bossC, "org_setup", {
        action: "create",
        name: `Tool AI ${mode}`,
      });
      for (const [user, client, role] of [
        [manager, managerC, "manager"],
        [member, memberC, "member"],
      ] as const) {
        await callOk(bossC, "org_invite", { emails: [user.email], role });
        const mine = await callOk<{ invitationsForMe: { invitationId: string }[] }>(client, "org");
        await callOk(client, "org_setup", { action: "accept", invitationId: mine.invitationsForMe[0]!.invitationId });
      }
      const files = { "index.html": "<h1>AI</h1>" };
      const soloAccount = await accountOf(hatch, solo);
      await seedApp(apps.context, {
        address: priv,
        owner: { id: solo.id, email: solo.email },
        accountId: soloAccount,
        visibility: "private",
        files,
      });
      await seedApp(apps.context, {
        address: pub,
        owner: { id: solo.id, email: solo.email },
        accountId: soloAccount,
        visibility: "public",
        files,
      });
      await seedApp(apps.context, {
        address: team,
        owner: { id: member.id, email: member.email },
        accountId: org.org.id,
        visibility: "org",
        files,
      });
      await seedApp(apps.context, {
        address: memberPrivate,
        owner: { id: member.id, email: member.email },
        accountId: org.org.id,
        visibility: "private",
        files,
      });
    }, 90_000);
    afterAll(async () => {
      await Promise.all([soloC, bossC, managerC, memberC, strangerC].map((c) => c?.close()));
      await hatch?.stop();
    });

    async function choiceOf(address: string) {
      const [row] = await apps.context.db
        .select({ choice: appsTable.aiChoice, payer: appsTable.aiPayerId })
        .from(appsTable)
        .where(eq(appsTable.address, address));
      return row;
    }

    test("mine on the user's own private app: no warning, no question; keyAvailable follows the key", async () => {
      const result = await soloC.callTool({ name: "tool_ai", arguments: { address: priv, value: "mine" } });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual({
        status: "updated",
        address: priv,
        value: "mine",
        keyAvailable: false,
        costWarning: null,
      });
      expect(textOf(result)).toContain(`${hatch.baseUrl}/dashboard/ai-keys?scope=mine`);
      expect(await choiceOf(priv)).toEqual({ choice: "mine", payer: solo.id });
      await addAiKey(hatch, solo, { scope: "mine", provider: "fake", key: "sk-solo-own-key-1" });
      const again = await callOk<AiOut>(soloC, "tool_ai", { address: priv, value: "mine" });
      expect(again.keyAvailable).toBe(true);
    });

    test("without forms: a public app asks the AI to ask the user; only acceptCost true changes the choice", async () => {
      const first = await soloC.callTool({ name: "tool_ai", arguments: { address: pub, value: "tool" } });
      expect(first.isError).toBeFalsy();
      const asked = first.structuredContent as AiOut;
      expect(asked).toMatchObject({ status: "needs_user", address: pub, value: "tool", keyAvailable: false });
      expect(asked.costWarning).toContain("anyone with the link");
      expect(asked.userAction).toMatchObject({ kind: "ask_user", fields: ["acceptCost"] });
      expect(textOf(first)).toContain("acceptCost");
      expect(await choiceOf(pub)).toEqual({ choice: "none", payer: null });

      const declined = await callOk<AiOut>(soloC, "tool_ai", { address: pub, value: "tool", acceptCost: false });
      expect(declined.status).toBe("needs_user");
      expect(await choiceOf(pub)).toEqual({ choice: "none", payer: null });

      const accepted = await callOk<AiOut>(soloC, "tool_ai", { address: pub, value: "tool", acceptCost: true });
      expect(accepted).toMatchObject({ status: "updated", value: "tool" });
      expect(accepted.costWarning).toContain("anyone with the link");
      expect(await choiceOf(pub)).toEqual({ choice: "tool", payer: null });
      const events = await apps.context.db
        .select({ event: outbox.event })
        .from(outbox)
        .where(eq(outbox.subject, "events.apps.app.ai_choice_changed"));
      const mine = events.map((e) => e.event).filter((e) => e.app === pub);
      expect(mine.map((e) => [e.details.from, e.details.to])).toEqual([["none", "tool"]]);
    });

    test("with forms: the user answers the cost question themselves; a no or a decline changes nothing", async () => {
      let reply: { action: "accept" | "decline"; content?: Record<string, boolean> } = { action: "decline" };
      const form = await connectFormClient(hatch, boss.accessToken, () => reply);
      try {
        const declined = await form.client.callTool({
          name: "tool_ai",
          arguments: { address: team, value: "company" },
        });
        expect(declined.isError).toBeFalsy();
        expect(declined.structuredContent).toEqual({ status: "declined" });
        expect(textOf(declined)).toContain("declined");
        expect(form.asked[0]).toContain("The organization pays for every AI call");
        expect(form.schemas[0]).toMatchObject({ properties: { acceptCost: { type: "boolean" } } });
        reply = { action: "accept", content: { acceptCost: false } };
        const no = await callOk<AiOut>(form.client, "tool_ai", { address: team, value: "company" });
        expect(no.status).toBe("declined");
        expect(await choiceOf(team)).toEqual({ choice: "none", payer: null });
        reply = { action: "accept", content: { acceptCost: true } };
        const yes = await callOk<AiOut>(form.client, "tool_ai", { address: team, value: "company" });
        expect(yes).toMatchObject({ status: "updated", value: "company", keyAvailable: false });
        expect(await choiceOf(team)).toEqual({ choice: "company", payer: null });
      } finally {
        await form.client.close();
      }
    });

    test("a manager paying with their own key for another person's private app gets the warning too", async () => {
      const asked = await callOk<AiOut>(managerC, "tool_ai", { address: memberPrivate, value: "mine" });
      expect(asked.status).toBe("needs_user");
      expect(asked.costWarning).toContain("You pay for every AI call");
      const done = await callOk<AiOut>(managerC, "tool_ai", {
        address: memberPrivate,
        value: "mine",
        acceptCost: true,
      });
      expect(done.status).toBe("updated");
      expect(await choiceOf(memberPrivate)).toEqual({ choice: "mine", payer: manager.id });
    });

    test("none turns AI calls off without a question", async () => {
      const off = await callOk<AiOut>(soloC, "tool_ai", { address: pub, value: "none" });
      expect(off).toEqual({ status: "updated", address: pub, value: "none", keyAvailable: false, costWarning: null });
      expect(await choiceOf(pub)).toEqual({ choice: "none", payer: null });
    });

    test("with forms the AI's own acceptCost does not skip the user's question", async () => {
      const form = await connectFormClient(hatch, boss.accessToken, () => ({ action: "decline" }));
      try {
        const skipped = await form.client.callTool({
          name: "tool_ai",
          arguments: { address: team, value: "tool", acceptCost: true },
        });
        expect(skipped.isError).toBeFalsy();
        expect(textOf(skipped)).toContain("declined");
        expect(form.asked).toHaveLength(1);
      } finally {
        await form.client.close();
      }
    });

    test("only the organization's owner or an admin may let the company's key pay", async () => {
      expect(await refused(memberC, "tool_ai", { address: team, value: "company", acceptCost: true })).toMatch(
        /owner or an admin.*\(forbidden\)$/,
      );
    });

    test("company needs a company account; strangers and unknown apps are not found", async () => {
      expect(await refused(soloC, "tool_ai", { address: priv, value: "company" })).toMatch(
        /personal account.*Choose mine or tool.*\(invalid_input\)$/,
      );
      expect(await refused(strangerC, "tool_ai", { address: priv, value: "none" })).toMatch(
        /no app at the address.*\(not_found\)$/,
      );
      expect(await refused(soloC, "tool_ai", { address: "no-such-app-ai", value: "none" })).toMatch(/\(not_found\)$/);
      expect(await refused(soloC, "tool_ai", { address: priv, value: "everyone" })).toContain("value");
    });
  });
}
