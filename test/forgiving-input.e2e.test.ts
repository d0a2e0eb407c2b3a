import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { refused } from "./support/orgs.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

type User = Awaited<ReturnType<typeof userWithToken>>;
const page = (title: string) => `<!doctype html><title>${title}</title><h1>${title}</h1>`;

// Where a model's intent is clear, Hatch takes it: an app by its URL or name, people added to a private app, the one
// invitation waiting; and a colleague's app says whose it is instead of "no app".
for (const mode of EMBEDDED_MODES) {
  describe(`forgiving input (${mode})`, () => {
    let hatch: TestHatch;
    let alice: User;
    let aliceC: Client;
    let url: string;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      alice = await userWithToken(hatch, { name: "Alice Example" });
      aliceC = await connectClient(hatch, alice.accessToken);
      const made = await callOk<{ address: string; url: string }>(aliceC, "publish", {
        name: "Garden Planner",
        visibility: "private",
        files: [{ path: "index.html", content: page("garden"), encoding: "utf8" }],
      });
      url = made.url;
      expect(made.address).toBe("garden-planner");
    }, 60_000);
    afterAll(async () => {
      await aliceC?.close();
      await hatch?.stop();
    });

    test("an app given by its URL, or by its exact name, is the app at its address", async () => {
      const byUrl = await callOk<{ address: string }>(aliceC, "tool_stats", { address: `${url}index.html` });
      expect(byUrl.address).toBe("garden-planner");
      const byName = await callOk<{ address: string; versions: unknown[] }>(aliceC, "rollback", {
        address: "garden planner",
      });
      expect(byName.address).toBe("garden-planner");
      expect(await refused(aliceC, "tool_stats", { address: "Nothing Like It" })).toContain(
        'no app at the address "Nothing Like It"',
      );
    });

    test("two apps with the same name: the answer lists their addresses instead of guessing", async () => {
      const a = await callOk<{ address: string }>(aliceC, "publish", {
        name: "Twin Peaks",
        visibility: "private",
        files: [{ path: "index.html", content: page("a"), encoding: "utf8" }],
      });
      const b = await callOk<{ address: string }>(aliceC, "publish", {
        name: "twin peaks",
        visibility: "private",
        files: [{ path: "index.html", content: page("b"), encoding: "utf8" }],
      });
      const text = await refused(aliceC, "tool_stats", { address: "Twin Peaks" });
      expect(text).toContain('Several apps are named "Twin Peaks"');
      expect(text).toContain(a.address);
      expect(text).toContain(b.address);
    });

    test("another user's app name or URL resolves to nothing of theirs", async () => {
      const bob = await userWithToken(hatch);
      const bobC = await connectClient(hatch, bob.accessToken);
      try {
        expect(await refused(bobC, "tool_stats", { address: "Garden Planner" })).toContain("no app at the address");
        expect(await refused(bobC, "tool_stats", { address: url })).toContain('no app at the address "garden-planner"');
      } finally {
        await bobC.close();
      }
    });

    test("adding people to a private app shares it with them, and the answer says so", async () => {
      const result = await aliceC.callTool({
        name: "share",
        arguments: { address: "garden-planner", add: ["carol@example.com"] },
      });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ visibility: "people", people: ["carol@example.com"] });
      expect(textOf(result)).toContain("was private, so it is now shared with people");
    });

    test("accept without an id takes the one invitation waiting; none or several say what to do", async () => {
      const owner = await userWithToken(hatch);
      const ownerC = await connectClient(hatch, owner.accessToken);
      const dana = await userWithToken(hatch, { verified: true });
      const danaC = await connectClient(hatch, dana.accessToken);
      try {
        expect(await refused(danaC, "org_setup", { action: "accept" })).toContain(
          `No invitation is waiting for ${dana.email}`,
        );
        await callOk(ownerC, "org_setup", { action: "create", name: "Seed Co" });
        await callOk(ownerC, "org_invite", { emails: [dana.email] });
        const joined = await callOk<{ status: string; org: { name: string } }>(danaC, "org_setup", {
          action: "accept",
        });
        expect(joined).toMatchObject({ status: "joined", org: { name: "Seed Co" } });
      } finally {
        await ownerC.close();
        await danaC.close();
      }
    });

    test("an organization colleague's app names its owner instead of 'no app'", async () => {
      const boss = await userWithToken(hatch, { name: "Boss" });
      const bossC = await connectClient(hatch, boss.accessToken);
      const member = await userWithToken(hatch, { name: "Mia Member", verified: true });
      const memberC = await connectClient(hatch, member.accessToken);
      try {
        await callOk(bossC, "org_setup", { action: "create", name: "Colleagues" });
        await callOk(bossC, "org_invite", { emails: [member.email], permissions: ["publish"] });
        await callOk(memberC, "org_setup", { action: "accept" });
        const app = await callOk<{ address: string }>(memberC, "publish", {
          name: "Mia Board",
          visibility: "org",
          files: [{ path: "index.html", content: page("mia"), encoding: "utf8" }],
        });
        const text = await refused(bossC, "delete_tool", { address: app.address });
        expect(text).toContain(`${app.address} is Mia Member (${member.email})'s app in your organization`);
        expect(text).toContain("org_app_pause");
        expect(text).toContain("(forbidden)");
        // Someone outside the organization still learns nothing.
        const stranger = await userWithToken(hatch);
        const strangerC = await connectClient(hatch, stranger.accessToken);
        expect(await refused(strangerC, "delete_tool", { address: app.address })).toContain("no app at the address");
        await strangerC.close();
      } finally {
        await bossC.close();
        await memberC.close();
      }
    });
  });
}
