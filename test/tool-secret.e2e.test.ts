import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppsService } from "@hatch/apps";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, type ElicitRequest, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { and, eq } from "drizzle-orm";
import { Browser } from "../gateway/test/oauth-harness.ts";
import { csrfOf, hiddenFields } from "../gateway/test/support.ts";
import { outbox, secrets } from "../services/apps/src/db/schema.ts";
import { openSecret } from "../services/apps/src/secrets/store.ts";
import { seedApp } from "../services/apps/test/support/seed.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, connectFormClient, textOf, userWithToken } from "./support/mcp.ts";
import { refused } from "./support/orgs.ts";
import { MODES } from "./support/servers.ts";

// tool_secret through the gateway, and the dashboard page it links to, over real HTTP: the link, the value typed on
// the page (stored sealed, never shown again), delete after the user confirms, who may; and the link offered to the
// user through URL-mode elicitation when the client declared it.

type User = Awaited<ReturnType<typeof userWithToken>>;
type SecretOut = {
  status: string;
  address: string;
  name: string;
  url: string | null;
  isSet: boolean;
  referencedBy: string[];
  userAction?: { kind: string; message: string; fields: string[]; url: string | null; expiresAt: string | null };
};
const PASSWORD = "correct horse battery";
const VALUE = "sk-live-0123456789-TYPED-ON-THE-PAGE";
const CONFIG = {
  apis: {
    weather: { url: "https://api.weather.example/v1", secret: "WEATHER_KEY", in: { query: "appid" } },
    forecast: { url: "https://forecast.example", secret: "WEATHER_KEY" },
  },
};

for (const mode of MODES) {
  describe(`tool_secret and the secret page (${mode})`, () => {
    let hatch: TestHatch;
    let apps: AppsService;
    let ownerUser: User, managerUser: User, memberUser: User, strangerUser: User;
    let owner: Client, manager: Client, member: Client, stranger: Client;
    let appId = "";
    const address = `weather-${mode}`;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      apps = hatch.services.get("apps") as AppsService;
      [ownerUser, managerUser, memberUser, strangerUser] = (await Promise.all(
        ["Olive", "Manny", "Mel", "Stan"].map((name) => userWithToken(hatch, { name })),
      )) as [User, User, User, User];
      [owner, manager, member, stranger] = (await Promise.all(
        [ownerUser, managerUser, memberUser, strangerUser].map((u) => connectClient(hatch, u.accessToken)),
      )) as [Client, Client, Client, Client];
      const org = await callOk<{ org: { id: string } }>(owner, "org_setup", {
        action: "create",
        name: `Secrets ${mode}`,
      });
      await callOk(owner, "org_invite", { emails: [managerUser.email], role: "manager" });
      await callOk(owner, "org_invite", { emails: [memberUser.email], role: "member" });
      for (const client of [manager, member]) {
        const mine = await callOk<{ invitationsForMe: { invitationId: string }[] }>(client, "org");
        await callOk(client, "org_setup", { action: "accept", invitationId: mine.invitationsForMe[0]!.invitationId });
      }
      const app = await seedApp(apps.context, {
        owner: { id: ownerUser.id, email: ownerUser.email },
        accountId: org.org.id,
        visibility: "org",
        address,
        name: "Weather",
        files: { "index.html": "<h1>Weather</h1>" },
        config: CONFIG,
      });
      appId = app.id;
    }, 90_000);
    afterAll(async () => {
      await Promise.all([owner, manager, member, stranger].map((client) => client?.close()));
      await hatch?.stop();
    });

    const pagePath = (name = "WEATHER_KEY") => `/dashboard/apps/${address}/secrets/${name}`;
    const storedRow = async () =>
      (
        await apps.context.db
          .select()
          .from(secrets)
          .where(and(eq(secrets.appId, appId), eq(secrets.name, "WEATHER_KEY")))
      )[0];

    async function signedIn(user: User): Promise<Browser> {
      const browser = new Browser((path, init) => fetch(`${hatch.baseUrl}${path}`, { ...init, redirect: "manual" }));
      expect((await browser.signIn(user.email, PASSWORD)).status).toBe(303);
      return browser;
    }

    test("link: the page's url and what to do next; nothing is set yet; the apis that use it", async () => {
      const result = await owner.callTool({ name: "tool_secret", arguments: { address, name: "WEATHER_KEY" } });
      const data = result.structuredContent as SecretOut;
      const url = `${hatch.baseUrl}${pagePath()}`;
      expect(data).toEqual({
        status: "link",
        address,
        name: "WEATHER_KEY",
        url,
        isSet: false,
        referencedBy: ["forecast", "weather"],
        userAction: {
          kind: "open_link",
          message: "Open this page and type the value of WEATHER_KEY for Weather there, then tell your AI it is set.",
          fields: [],
          url,
          expiresAt: null,
        },
      });
      expect(textOf(result)).toBe(
        `Give the user this link to set WEATHER_KEY for ${address} in their browser (never ask them for the value): ${url}\nNo value is set yet. Used by api forecast, api weather.`,
      );
    });

    test("the page: sign-in first, then the app, the secret and its APIs; without a CSRF token nothing is stored", async () => {
      const anonymous = await fetch(`${hatch.baseUrl}${pagePath()}`, { redirect: "manual" });
      expect(anonymous.status).toBe(303);
      expect(anonymous.headers.get("location")).toBe(`/signin?next=${encodeURIComponent(pagePath())}`);

      const browser = await signedIn(ownerUser);
      const page = await browser.get(pagePath());
      expect(page.status).toBe(200);
      const html = await page.text();
      for (const part of [
        "Secret WEATHER_KEY",
        "Weather",
        address,
        "https://api.weather.example/v1",
        "https://forecast.example",
        "No value is set yet.",
        'type="password"',
        'autocomplete="off"',
      ])
        expect([part, html.includes(part)]).toEqual([part, true]);

      const forged = await browser.post(pagePath(), { value: VALUE });
      expect(forged.status).toBe(403);
      expect(await storedRow()).toBeUndefined();
    });

    test("the value typed on the page is stored sealed, never shown; the tool then says it is set", async () => {
      const browser = await signedIn(ownerUser);
      const form = await (await browser.get(pagePath())).text();
      const empty = await browser.post(pagePath(), { ...hiddenFields(form), value: "   " });
      expect(empty.status).toBe(400);
      expect(await empty.text()).toContain("Type or paste the value first.");

      // Saved: back to the page (303), so a reload does not send the value again; the page says so once.
      const saved = await browser.post(pagePath(), { ...hiddenFields(form), value: `${VALUE}\n` });
      expect(saved.status).toBe(303);
      expect(saved.headers.get("location")).toBe(pagePath());
      expect(await saved.text()).not.toContain(VALUE);
      const html = await (await browser.get(pagePath())).text();
      expect(html).toContain('role="status">Saved. Tell your AI the secret is set.');
      expect(html).toContain(`by ${ownerUser.email}`);
      expect(html).not.toContain(VALUE);

      const row = (await storedRow())!;
      expect(JSON.stringify(row)).not.toContain(VALUE);
      expect(row.keyId).toBe(apps.context.sealer.currentKeyId);
      expect(await openSecret(apps.context, appId, "WEATHER_KEY")).toBe(VALUE);
      const again = await (await browser.get(pagePath())).text();
      expect(again).not.toContain(VALUE);
      expect(again).toContain("A value is set");
      expect(again).not.toContain("Saved.");

      const data = await callOk<SecretOut>(owner, "tool_secret", { address, name: "WEATHER_KEY" });
      expect(data.isSet).toBe(true);
      const events = await apps.context.db.select().from(outbox);
      const set = events.filter((e) => e.subject.endsWith("app.secret_set"));
      expect(set).toHaveLength(1);
      expect(set[0]!.event.summary).toContain("set a secret of Weather");
      expect(JSON.stringify(events)).not.toContain(VALUE);
    });

    test("a manager of the organization may; a member is told whose app it is, a stranger that it does not exist", async () => {
      expect((await callOk<SecretOut>(manager, "tool_secret", { address, name: "WEATHER_KEY" })).isSet).toBe(true);
      const managerPage = await (await signedIn(managerUser)).get(pagePath());
      expect(managerPage.status).toBe(200);
      for (const [client, code] of [
        [member, "(forbidden)"],
        [stranger, "(not_found)"],
      ] as const) {
        expect(await refused(client, "tool_secret", { address, name: "WEATHER_KEY" })).toContain(code);
        expect(await refused(client, "tool_secret", { address, name: "WEATHER_KEY", action: "delete" })).toContain(
          code,
        );
      }
      const before = (await storedRow())!.sealed;
      for (const [user, status] of [
        [memberUser, 403],
        [strangerUser, 404],
      ] as const) {
        const browser = await signedIn(user);
        const page = await browser.get(pagePath());
        expect(page.status).toBe(status);
        const html = await page.text();
        expect(html).not.toContain("https://api.weather.example");
        const post = await browser.post(pagePath(), { csrf: csrfOf(html), value: "overwritten" });
        expect(post.status).toBe(status);
      }
      expect((await storedRow())!.sealed).toBe(before);
    });

    test("a name no api uses yet may be set, and the page and the tool say so", async () => {
      const data = await callOk<SecretOut>(owner, "tool_secret", { address, name: "LATER_KEY" });
      expect(data.referencedBy).toEqual([]);
      const text = textOf(await owner.callTool({ name: "tool_secret", arguments: { address, name: "LATER_KEY" } }));
      expect(text).toContain("No api in the current version's service.json uses LATER_KEY yet");
      const html = await (await (await signedIn(ownerUser)).get(pagePath("LATER_KEY"))).text();
      expect(html).toContain("No API in the app's current version uses LATER_KEY yet");
    });

    test("delete asks the user first; after they confirm the value is gone; deleting again says nothing is set", async () => {
      const declining = await connectFormClient(hatch, ownerUser.accessToken, () => ({
        action: "accept",
        content: { confirm: false },
      }));
      const kept = await declining.client.callTool({
        name: "tool_secret",
        arguments: { address, name: "WEATHER_KEY", action: "delete" },
      });
      await declining.client.close();
      // An unticked box is a decline: one shape, not an error, nothing changed.
      expect(kept.isError).toBeFalsy();
      expect(kept.structuredContent).toEqual({ status: "declined" });
      expect(await storedRow()).toBeDefined();

      const { client, asked } = await connectFormClient(hatch, ownerUser.accessToken, () => ({
        action: "accept",
        content: { confirm: true },
      }));
      const result = await client.callTool({
        name: "tool_secret",
        arguments: { address, name: "WEATHER_KEY", action: "delete" },
      });
      expect(asked).toEqual([
        `Delete the secret WEATHER_KEY of "Weather" (${address})? Its value cannot be recovered. The app's api forecast, api weather will stop working until a new value is set.`,
      ]);
      expect(result.structuredContent).toMatchObject({
        status: "deleted",
        isSet: false,
        referencedBy: ["forecast", "weather"],
      });
      expect(textOf(result)).toContain(`Deleted WEATHER_KEY from ${address}.`);
      expect(await storedRow()).toBeUndefined();

      const again = await client.callTool({
        name: "tool_secret",
        arguments: { address, name: "WEATHER_KEY", action: "delete" },
      });
      await client.close();
      expect(asked).toHaveLength(1);
      expect(textOf(again)).toBe(`WEATHER_KEY has no value in ${address}, so there is nothing to delete.`);
    });

    test("without elicitation, delete gives a confirm link and changes nothing yet", async () => {
      const browser = await signedIn(ownerUser);
      const form = await (await browser.get(pagePath())).text();
      expect((await browser.post(pagePath(), { ...hiddenFields(form), value: VALUE })).status).toBe(303);
      const result = await owner.callTool({
        name: "tool_secret",
        arguments: { address, name: "WEATHER_KEY", action: "delete" },
      });
      const data = result.structuredContent as SecretOut;
      expect(data.status).toBe("needs_user");
      expect(data.userAction?.url).toStartWith(`${hatch.baseUrl}/confirm/`);
      expect(await storedRow()).toBeDefined();
    });

    test("bad inputs are refused with what to fix", async () => {
      for (const args of [
        { address, name: "1BAD" },
        { address, name: "has-dash" },
        { address, name: "" },
        { address, name: "A".repeat(65) },
        { address, name: "WEATHER_KEY", action: "show" },
        { address, name: "WEATHER_KEY", value: VALUE },
        { address: "not\u0000an-address", name: "WEATHER_KEY" },
        { name: "WEATHER_KEY" },
      ]) {
        const text = await refused(owner, "tool_secret", args);
        expect([JSON.stringify(args), text.endsWith("(invalid_input)")]).toEqual([JSON.stringify(args), true]);
      }
      expect(await refused(owner, "tool_secret", { address: "no-such-app", name: "WEATHER_KEY" })).toContain(
        "(not_found)",
      );
      const browser = await signedIn(ownerUser);
      expect((await browser.get(`/dashboard/apps/${address}/secrets/bad-name`)).status).toBe(404);
      expect((await browser.get(`/dashboard/apps/no-such-app/secrets/WEATHER_KEY`)).status).toBe(404);
    });

    describe("URL-mode elicitation", () => {
      async function urlClient(
        reply: (request: ElicitRequest["params"]) => ElicitResult | Promise<ElicitResult>,
      ): Promise<{ client: Client; offered: ElicitRequest["params"][] }> {
        const offered: ElicitRequest["params"][] = [];
        const client = new Client(
          { name: "claude-code", version: "2.0.0" },
          { capabilities: { elicitation: { url: {} } } },
        );
        client.setRequestHandler(ElicitRequestSchema, async (request) => {
          offered.push(request.params);
          return reply(request.params);
        });
        await client.connect(
          new StreamableHTTPClientTransport(new URL(hatch.mcpUrl), {
            requestInit: { headers: { Authorization: `Bearer ${ownerUser.accessToken}` } },
          }),
        );
        return { client, offered };
      }

      test("the page is offered to the user before the result; the text says what they chose", async () => {
        const url = `${hatch.baseUrl}${pagePath()}`;
        for (const [action, said] of [
          ["accept", "The user chose to open the page in their browser; wait for them to say they are done."],
          ["decline", "The user declined to open the page; give them the link if they ask for it."],
          ["cancel", "The user dismissed the offer to open the page; give them the link."],
        ] as const) {
          const { client, offered } = await urlClient(() => ({ action }));
          const result = await client.callTool({ name: "tool_secret", arguments: { address, name: "WEATHER_KEY" } });
          await client.close();
          expect(offered).toHaveLength(1);
          expect(offered[0]).toMatchObject({
            mode: "url",
            url,
            message: "Open this page and type the value of WEATHER_KEY for Weather there, then tell your AI it is set.",
          });
          expect((offered[0] as { elicitationId?: string }).elicitationId).toMatch(/^[A-Za-z0-9_-]+-link$/);
          expect(result.isError).toBeFalsy();
          expect(textOf(result).split("\n").at(-1)).toBe(said);
          expect((result.structuredContent as SecretOut).url).toBe(url);
        }
      });

      test("a client that fails the offer still gets the link; form-only clients are not offered it", async () => {
        const { client } = await urlClient(() => {
          throw new Error("no browser here");
        });
        const result = await client.callTool({ name: "tool_secret", arguments: { address, name: "WEATHER_KEY" } });
        await client.close();
        expect(result.isError).toBeFalsy();
        expect(textOf(result)).toContain(`${hatch.baseUrl}${pagePath()}`);
        expect(textOf(result)).not.toContain("The user");

        const form = await connectFormClient(hatch, ownerUser.accessToken, () => ({ action: "accept", content: {} }));
        await form.client.callTool({ name: "tool_secret", arguments: { address, name: "WEATHER_KEY" } });
        await form.client.close();
        expect(form.asked).toEqual([]);
      });

      test("a confirm link (delete, no form elicitation) is offered the same way", async () => {
        const { client, offered } = await urlClient(() => ({ action: "accept" }));
        const result = await client.callTool({
          name: "tool_secret",
          arguments: { address, name: "WEATHER_KEY", action: "delete" },
        });
        await client.close();
        expect(offered[0]?.mode).toBe("url");
        expect((offered[0] as { url: string }).url).toStartWith(`${hatch.baseUrl}/confirm/`);
        expect(textOf(result)).toContain("The user chose to open the page");
        expect(await storedRow()).toBeDefined();
      });
    });
  });
}
