import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { Browser } from "../gateway/test/oauth-harness.ts";
import { csrfOf } from "../gateway/test/support.ts";
import { eventually } from "./support/eventually.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { refused, seedApp, today } from "./support/orgs.ts";
import { MODES } from "./support/servers.ts";

// Issue 26, items 9 and 10, as a model meets them through the SDK client: org_activity takes an app as every other tool
// does (address, URL or name), says which action kinds exist when nothing matches, and reads the dates a model
// writes; removing a member asks once, with one link, and the question says what moves and who receives it.

type User = Awaited<ReturnType<typeof userWithToken>>;
/** org_activity's structured content (app only for an entry about one). */
type Activity = { entries: { app?: string; action: string }[]; hasMore?: true };

const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];
/** Today as a person writes it: "March 1, 2026". */
const todayInWords = () => {
  const now = new Date();
  return `${MONTHS[now.getUTCMonth()]} ${now.getUTCDate()}, ${now.getUTCFullYear()}`;
};

for (const mode of MODES) {
  describe(`org tools as a model uses them (${mode})`, () => {
    let hatch: TestHatch;
    let owner: User, bob: User, carol: User;
    let o: Client, b: Client, c: Client;
    let orgId = "";
    let address = "";

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      [owner, bob, carol] = (await Promise.all(
        ["Olga Owner", "Bob Leaving", "Carol Staying"].map((name) => userWithToken(hatch, { name })),
      )) as [User, User, User];
      [o, b, c] = (await Promise.all([owner, bob, carol].map((u) => connectClient(hatch, u.accessToken)))) as [
        Client,
        Client,
        Client,
      ];
      orgId = (await callOk<{ org: { id: string } }>(o, "org_setup", { action: "create", name: `Round Two ${mode}` }))
        .org.id;
      for (const [client, user] of [
        [b, bob],
        [c, carol],
      ] as const) {
        await callOk(o, "org_invite", { emails: [user.email], role: "member" });
        const mine = await callOk<{ invitationsForMe: { invitationId: string }[] }>(client, "org");
        await callOk(client, "org_setup", { action: "accept", invitationId: mine.invitationsForMe[0]!.invitationId });
      }
      const published = await callOk<{ address: string }>(o, "publish", {
        name: "Field Notes",
        visibility: "org",
        files: [{ path: "index.html", content: "<h1>notes</h1>", encoding: "utf8" }],
      });
      address = published.address;
    }, 60_000);
    afterAll(async () => {
      for (const client of [o, b, c]) await client?.close();
      await hatch?.stop();
    });

    test("org_activity takes the app by name or URL, as other tools do; an unknown name says where names are", async () => {
      const byName = await eventually(async () => {
        const log = await callOk<Activity>(o, "org_activity", { app: "Field Notes" });
        return log.entries.some((e) => e.action === "app.published") ? log : undefined;
      }, "the publish in the log");
      expect(byName.entries.every((e) => e.app === address)).toBe(true);
      const byUrl = await callOk<Activity>(o, "org_activity", { app: `http://${address}.localhost:1/` });
      expect(byUrl.entries.map((e) => e.action)).toEqual(byName.entries.map((e) => e.action));
      expect(await refused(o, "org_activity", { app: "No Such App" })).toContain("org_apps");
    });

    test("no match lists the action kinds this log holds", async () => {
      const result = await o.callTool({ name: "org_activity", arguments: { action: "app.exploded" } });
      expect(result.isError).not.toBe(true);
      expect(textOf(result)).toStartWith("No activity matches. Action kinds in this log: ");
      for (const kind of ["app.published", "member.joined", "org.created"]) expect(textOf(result)).toContain(kind);
    });

    test("dates as a model writes them: an ISO time is its UTC day, a month by name is read; nonsense still gets the example", async () => {
      const iso = await callOk<Activity>(o, "org_activity", { from: `${today()}T00:00:00Z`, action: "org.created" });
      expect(iso.entries.map((e) => e.action)).toEqual(["org.created"]);
      const words = await callOk<Activity>(o, "org_activity", { from: todayInWords(), to: todayInWords() });
      expect(words.entries.length).toBeGreaterThan(0);
      expect(await refused(o, "org_activity", { from: "last Tuesday" })).toContain("e.g. 2026-03-01");
    });

    test("remove: one link; the question names the apps that move, the default receiver and who else may receive them", async () => {
      await seedApp(hatch, {
        address: `bobs-board-${mode}`,
        name: "Bob's Board",
        accountId: orgId,
        owner: { id: bob.id, email: bob.email, name: bob.name },
      });
      const listed = await o.listTools();
      const description = listed.tools.find((t) => t.name === "org_member_update")!.description!;
      expect(description).not.toContain("call again");

      const asked = await o.callTool({ name: "org_member_update", arguments: { email: bob.email, action: "remove" } });
      const text = textOf(asked);
      const data = asked.structuredContent as { status: string; appsRecipient: string; userAction: { url: string } };
      expect(data).toMatchObject({ status: "needs_user", appsRecipient: owner.email.toLowerCase() });
      expect(text).toContain(
        `Their app moves to you (${owner.email.toLowerCase()}): Bob's Board (bobs-board-${mode}).`,
      );
      expect(text).toContain(`Another member may receive them instead: ${carol.email.toLowerCase()}.`);
      expect(text).not.toContain("the member you choose");
      expect(text.match(/http\S+\/confirm\/\S+/g)).toHaveLength(1);

      // The person confirms on the page, keeping the default shown there.
      const path = new URL(data.userAction.url).pathname;
      const browser = new Browser((p, init) => fetch(`${hatch.baseUrl}${p}`, { ...init, redirect: "manual" }));
      expect((await browser.signIn(owner.email, "correct horse battery")).status).toBe(303);
      const form = await (await browser.get(path)).text();
      expect(form).toContain(`value="${owner.email.toLowerCase()}" checked`);
      const done = await browser.post(path, {
        csrf: csrfOf(form),
        action: "confirm",
        "f.appsRecipient": owner.email.toLowerCase(),
      });
      expect(await done.text()).toContain(`Removed ${bob.email}`);
      const mine = await callOk<{ apps: { address: string }[] }>(o, "org_apps", { owner: owner.email });
      expect(mine.apps.map((a) => a.address)).toContain(`bobs-board-${mode}`);
    });
  });
}
