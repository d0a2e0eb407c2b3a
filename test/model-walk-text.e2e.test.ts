import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CallReplySchema, deriveKey, signContext, subjects, type CallContextClaims } from "@hatch/contracts";
import { decodeJson, encodeJson } from "@hatch/platform";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { addAiKey } from "./support/ai.ts";
import { startTestHatch, TEST_SECRET, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { refused } from "./support/orgs.ts";
import { MODES } from "./support/servers.ts";

// Issue 26, items 11-13, through the SDK client: an unknown argument name gets the one it most likely meant (at the
// gateway and again in the service runtime), counts are said in the right number, and the facts the descriptions
// promise are in the text, not only in structuredContent.

type User = Awaited<ReturnType<typeof userWithToken>>;
const files = [{ path: "index.html", content: "<!doctype html><title>One</title><h1>One</h1>", encoding: "utf8" }];

for (const mode of MODES) {
  describe(`the AI's side, round 2: names, numbers and facts (${mode})`, () => {
    let hatch: TestHatch;
    let ann: User;
    let bob: User;
    let annC: Client;

    beforeAll(async () => {
      hatch = await startTestHatch(mode, { serviceEnv: { AI_PROVIDERS: "fake=http://127.0.0.1:9/v1" } });
      ann = await userWithToken(hatch, { name: "Ann Talker" });
      bob = await userWithToken(hatch, { name: "Bob Listener" });
      annC = await connectClient(hatch, ann.accessToken);
      await callOk(annC, "publish", { name: "Solo Page", visibility: "private", files });
    }, 60_000);
    afterAll(async () => {
      await annC?.close();
      await hatch?.stop();
    });

    test("an unknown argument name gets a suggestion at the gateway", async () => {
      const app = await refused(annC, "tool_data", { app: "solo-page" });
      expect(app).toBe('Invalid arguments for tool_data: "app": did you mean "address"? (invalid_input)');
      expect(await refused(annC, "tool_stats", { adress: "solo-page" })).toContain('"adress": did you mean "address"?');
      expect(await refused(annC, "org_invite", { email: "x@example.com" })).toContain(
        '"email": did you mean "emails"?',
      );
      expect(await refused(annC, "org_activity", { address: "solo-page" })).toContain('"address": did you mean "app"?');
      expect(
        await refused(annC, "publish", {
          address: "solo-page",
          files: [{ path: "index.html", contents: "<h1>x</h1>" }],
        }),
      ).toContain('files.0: "contents": did you mean "content"?');
      // Nothing near: the names there are.
      expect(await refused(annC, "tool_logs", { address: "solo-page", colour: "red" })).toContain(
        '"colour" is not an argument (there are: address, ',
      );
    });

    test("the service runtime says the same when a call skips the gateway", async () => {
      const claims: CallContextClaims = {
        sub: ann.id,
        email: ann.email,
        name: ann.name,
        permissions: [],
        scope: "write",
        client: { kind: "cli", name: "test", elicitation: { form: false, url: false } },
        grant: "test-grant",
        rid: "test",
      };
      const account = await hatch.gateway.accounts.resolve(claims, { requestId: "test", traceparent: "" });
      const ctx = signContext(
        {
          ...claims,
          account: account.account,
          accountKind: account.accountKind,
          org: account.org,
          role: account.role,
          permissions: account.permissions,
        },
        deriveKey(TEST_SECRET, "ctx"),
      );
      const reply = CallReplySchema.parse(
        decodeJson(
          (
            await hatch.bus.request(
              subjects.tool("apps", "tool_stats"),
              encodeJson({ ctx, input: { app: "solo-page" } }),
              {
                timeoutMs: 10_000,
              },
            )
          ).data,
        ),
      );
      expect(reply.ok).toBe(false);
      if (reply.ok) return;
      expect(reply.error.code).toBe("invalid_input");
      expect(reply.error.message).toBe('Invalid arguments for tool_stats: "app": did you mean "address"?');
    });

    test("counts of one are said in the singular", async () => {
      const published = textOf(await annC.callTool({ name: "publish", arguments: { address: "solo-page", files } }));
      expect(published).toContain("1 file,");
      const versions = textOf(await annC.callTool({ name: "rollback", arguments: { address: "solo-page" } }));
      expect(versions).toContain("1 file\n");
      const stats = textOf(await annC.callTool({ name: "tool_stats", arguments: { address: "solo-page", days: 1 } }));
      expect(stats).toContain("last 1 day:");
      expect(stats).not.toMatch(/\b1 (unique viewers|opens|days|files|people)\b/);
      const noKey = await refused(annC, "ai_key", { scope: "mine", action: "delete", provider: "fake" });
      expect(noKey).not.toContain("It has no keys");
      expect(noKey).toContain("There are none.");
    });

    test("org_members, org_apps and ai_key say in the text what their structuredContent holds", async () => {
      await callOk(annC, "org_setup", { action: "create", name: "Facts Co" });
      const invited = textOf(await annC.callTool({ name: "org_invite", arguments: { emails: [bob.email] } }));
      expect(invited).toContain("Invited 1 person to Facts Co");
      await callOk(annC, "publish", { name: "Team Page", visibility: "org", files });

      const members = await annC.callTool({ name: "org_members", arguments: {} });
      const said = textOf(members);
      // structuredContent keeps who, which role, since or until (as days); the text gives those and the rest.
      const data = members.structuredContent as {
        members: { email: string; role: string; joinedAt: string }[];
        invitations: { email: string; role: string; expiresAt: string }[];
      };
      expect(said).toContain("1 member of Facts Co");
      const me = data.members[0]!;
      expect(said).toContain(`owner since ${me.joinedAt}; may publish, share_public, custom_domains, buy_domains`);
      const invitation = data.invitations[0]!;
      expect(said).toContain("1 open invitation:");
      expect(said).toContain(
        `- ${bob.email}: ${invitation.role}, may publish; invited by ${ann.email} on ` +
          `${new Date().toISOString().slice(0, 10)}, expires ${invitation.expiresAt}`,
      );

      const apps = await annC.callTool({ name: "org_apps", arguments: {} });
      const app = (apps.structuredContent as { apps: { address: string; currentVersion: number }[] }).apps[0]!;
      const url = hatch.appHostUrl.replace("//", `//${app.address}.`);
      expect(textOf(apps)).toContain(`1 app in the organization:\n- Team Page (team-page): ${url}`);
      expect(textOf(apps)).toContain(`v${app.currentVersion} of `);

      await addAiKey(hatch, ann, { scope: "mine", provider: "fake", key: "sk-facts-0123456789abcdef" });
      const keys = textOf(await annC.callTool({ name: "ai_key", arguments: { scope: "mine" } }));
      expect(keys).toContain(
        `1 AI key saved:\n- fake: yours, added ${new Date().toISOString().slice(0, 10)} by ${ann.email}`,
      );
    });
  });
}
