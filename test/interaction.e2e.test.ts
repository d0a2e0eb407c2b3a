import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import {
  buildQuestion,
  CallReplySchema,
  childTraceparent,
  delete_tool,
  deriveKey,
  signContext,
  subjects,
  type CallReply,
} from "@hatch/contracts";
import { decodeJson, encodeJson } from "@hatch/platform";
import { Browser } from "../gateway/test/oauth-harness.ts";
import { csrfOf } from "../gateway/test/support.ts";
import { startTestHatch, TEST_SECRET, type TestHatch } from "./support/hatch.ts";
import { connectClient, connectFormClient, textOf, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";
import {
  ANCIENT_ADDRESS,
  EXPIRED_ADDRESS,
  STAND_IN_CONFIRM_KEY,
  startStandInApps,
  type StandInApps,
} from "./support/stand-in-apps.ts";

type User = Awaited<ReturnType<typeof userWithToken>>;
const PASSWORD = "correct horse battery";

// The gateway's half of asking the user, driven through a stand-in apps service on the real bus: form
// elicitation when the client has it; otherwise a dashboard link (delete, share to public) or instructions for
// the AI (publish). The link is followed over real HTTP with cookies and CSRF, as a browser would.
for (const mode of MODES) {
  describe(`asking the user through the gateway (${mode})`, () => {
    let hatch: TestHatch;
    let apps: StandInApps;
    let owner: User;
    let other: User;

    beforeAll(async () => {
      hatch = await startTestHatch(mode, { services: ["orgs"] });
      apps = await startStandInApps(hatch);
      owner = await userWithToken(hatch);
      other = await userWithToken(hatch);
    }, 60_000);
    afterAll(async () => {
      await apps?.stop();
      await hatch?.stop();
    });
    beforeEach(() => apps.reset());

    /** Calls a tool from a client without elicitation and returns the confirm page's path. */
    async function linkFor(user: User, name: string, args: Record<string, unknown>): Promise<string> {
      const client = await connectClient(hatch, user.accessToken);
      const result = await client.callTool({ name, arguments: args });
      await client.close();
      const url = (result.structuredContent as { userAction?: { url?: string } } | undefined)?.userAction?.url;
      if (!url) throw new Error(`no link in ${textOf(result)}`);
      return new URL(url).pathname;
    }

    /** A browser (cookies kept, redirects not followed) signed in as the user. */
    async function signedIn(user: User): Promise<Browser> {
      const browser = new Browser((path, init) => fetch(`${hatch.baseUrl}${path}`, { ...init, redirect: "manual" }));
      const response = await browser.signIn(user.email, PASSWORD);
      expect(response.status).toBe(303);
      return browser;
    }

    /** Opens the confirm page and presses one of its buttons, with the page's CSRF token. */
    async function answer(
      browser: Browser,
      path: string,
      fields: Record<string, string> = { action: "confirm" },
    ): Promise<{ status: number; text: string }> {
      const page = await browser.get(path);
      expect(page.status).toBe(200);
      const response = await browser.post(path, { csrf: csrfOf(await page.text()), ...fields });
      return { status: response.status, text: await response.text() };
    }

    /** A tool call straight onto the bus, signed as the gateway would sign it for this user. */
    async function onBus(
      user: User,
      input: unknown,
      body: { answer?: Record<string, unknown>; confirm?: string },
    ): Promise<CallReply> {
      const claims = {
        sub: user.id,
        email: user.email,
        name: user.name,
        permissions: [],
        scope: "write" as const,
        client: { kind: "claude" as const, name: "claude-code", elicitation: { form: false, url: false } },
        grant: user.grantId,
        rid: "replay",
      };
      const ctx = signContext(claims, deriveKey(TEST_SECRET, "ctx"));
      const reply = await hatch.bus.request(subjects.tool("apps", "delete_tool"), encodeJson({ ctx, input, ...body }), {
        timeoutMs: 5_000,
      });
      return CallReplySchema.parse(decodeJson(reply.data));
    }

    describe("with form elicitation", () => {
      test("accept: the service acts once on the user's answer", async () => {
        const { client, asked } = await connectFormClient(hatch, owner.accessToken, () => ({
          action: "accept",
          content: { confirm: true },
        }));
        const result = await client.callTool({ name: "delete_tool", arguments: { address: "my-app" } });
        await client.close();
        expect(asked).toEqual(["Delete my-app? This cannot be undone."]);
        expect(result.isError).toBeFalsy();
        expect(result.structuredContent).toEqual({ status: "deleted", address: "my-app" });
        expect(apps.calls.map((c) => [c.answer, c.confirmed])).toEqual([
          [undefined, false],
          [{ confirm: true }, true],
        ]);
        expect(apps.acted).toEqual([
          { tool: "delete_tool", user: owner.id, input: { address: "my-app" }, answer: { confirm: true } },
        ]);
      });

      test("decline and cancel change nothing: the service is not called again", async () => {
        for (const action of ["decline", "cancel"] as const) {
          const { client } = await connectFormClient(hatch, owner.accessToken, () => ({ action }));
          const result = await client.callTool({ name: "delete_tool", arguments: { address: "my-app" } });
          await client.close();
          // Declined and cancelled are one shape: not an error, status declined, nothing changed.
          expect(result.isError).toBeFalsy();
          expect(result.structuredContent).toEqual({ status: "declined" });
          expect(textOf(result)).toContain("nothing was changed");
        }
        expect(apps.calls).toHaveLength(2);
        expect(apps.acted).toEqual([]);
      });

      test("an unticked confirmation box is a decline too: same shape, the service is not called with it", async () => {
        const { client } = await connectFormClient(hatch, owner.accessToken, () => ({
          action: "accept",
          content: { confirm: false },
        }));
        const result = await client.callTool({ name: "delete_tool", arguments: { address: "my-app" } });
        await client.close();
        expect(result.isError).toBeFalsy();
        expect(result.structuredContent).toEqual({ status: "declined" });
        expect(apps.calls).toHaveLength(1);
        expect(apps.acted).toEqual([]);
      });

      test("an answer that does not fit the form is told apart from a fault, names the field, and changes nothing", async () => {
        const { client } = await connectFormClient(hatch, owner.accessToken, () => ({
          action: "accept",
          content: { name: "Team Board", visibility: "everyone" },
        }));
        const result = await client.callTool({
          name: "publish",
          arguments: { files: [{ path: "index.html", content: "<h1>hi</h1>", encoding: "utf8" }] },
        });
        await client.close();
        expect(result.isError).toBe(true);
        expect(textOf(result)).toContain(
          "does not fit the form (visibility must be one of private, org, people, public)",
        );
        expect(textOf(result)).toContain("(invalid_input)");
        expect(textOf(result)).not.toContain("internal");
        expect(apps.calls).toHaveLength(1);
        expect(apps.acted).toEqual([]);
      });

      test("publish's questions are asked in the form too", async () => {
        const { client, asked } = await connectFormClient(hatch, owner.accessToken, () => ({
          action: "accept",
          content: { name: "Team Board", visibility: "org" },
        }));
        const result = await client.callTool({
          name: "publish",
          arguments: { files: [{ path: "index.html", content: "<h1>hi</h1>", encoding: "utf8" }] },
        });
        await client.close();
        expect(asked).toEqual(["What should the new app be called, and who may open it?"]);
        expect(result.structuredContent).toMatchObject({ status: "published", address: "team-board" });
        expect(apps.acted.map((a) => a.answer)).toEqual([{ name: "Team Board", visibility: "org" }]);
      });
    });

    describe("without elicitation", () => {
      test("ask_ai: the AI is told to ask the user and call again; nothing happens until it does", async () => {
        const client = await connectClient(hatch, owner.accessToken);
        const files = [{ path: "index.html", content: "<h1>hi</h1>", encoding: "utf8" }];
        const first = await client.callTool({ name: "publish", arguments: { files } });
        expect(first.isError).toBeFalsy();
        expect(first.structuredContent).toEqual({
          status: "needs_user",
          userAction: {
            kind: "ask_user",
            message: "What should the new app be called, and who may open it?",
            fields: ["name", "visibility"],
            url: null,
            expiresAt: apps.asked[0]!.expiresAt!,
          },
        });
        expect(Date.parse(apps.asked[0]!.expiresAt!)).toBeGreaterThan(Date.now());
        expect(textOf(first)).toContain("Ask the user for these");
        expect(textOf(first)).toContain("visibility: Who can open it (one of: private, org, people, public)");
        expect(apps.acted).toEqual([]);

        const second = await client.callTool({
          name: "publish",
          arguments: { files, name: "Recipes", visibility: "private" },
        });
        await client.close();
        expect(second.structuredContent).toMatchObject({ status: "published", address: "recipes" });
        expect(apps.acted).toHaveLength(1);
      });

      test("link: the result is a confirm page link that expires with the question; nothing happens yet", async () => {
        const client = await connectClient(hatch, owner.accessToken);
        const result = await client.callTool({ name: "delete_tool", arguments: { address: "my-app" } });
        await client.close();
        expect(result.isError).toBeFalsy();
        const action = (result.structuredContent as { userAction: { url: string; expiresAt: string } }).userAction;
        expect(result.structuredContent).toEqual({
          status: "needs_user",
          address: "my-app",
          userAction: {
            kind: "open_link",
            message: "Delete my-app? This cannot be undone.",
            fields: [],
            url: action.url,
            expiresAt: apps.asked[0]!.expiresAt!,
          },
        });
        expect(action.url).toMatch(new RegExp(`^${hatch.baseUrl}/confirm/[A-Za-z0-9_-]{32}$`));
        expect(textOf(result)).toContain(
          `confirm this in their browser: give them this link (valid until ${action.expiresAt}): ${action.url}`,
        );
        expect(apps.calls).toHaveLength(1);
        expect(apps.acted).toEqual([]);
      });
    });

    describe("the confirm page", () => {
      test("sign in through the link, see the question, confirm: the service acts once; the link then works no more", async () => {
        const path = await linkFor(owner, "delete_tool", { address: "my-app" });
        const browser = new Browser((p, init) => fetch(`${hatch.baseUrl}${p}`, { ...init, redirect: "manual" }));
        const anonymous = await browser.get(path);
        expect(anonymous.status).toBe(303);
        expect(anonymous.headers.get("location")).toBe(`/signin?next=${encodeURIComponent(path)}`);
        const signIn = await browser.signIn(owner.email, PASSWORD, path);
        expect(signIn.headers.get("location")).toBe(path);

        const page = await (await browser.get(path)).text();
        expect(page).toContain("Delete my-app? This cannot be undone.");
        expect(page).toContain(`Hatch CLI, the AI client you connected, asks you, ${owner.email}`);
        expect(page).toContain(
          '<button type="submit" name="action" value="confirm" class="danger">Delete my-app</button>',
        );
        expect(page).not.toContain('name="f.');

        const done = await answer(browser, path);
        expect(done.status).toBe(200);
        expect(done.text).toContain("Deleted my-app.");
        expect(apps.acted).toEqual([
          { tool: "delete_tool", user: owner.id, input: { address: "my-app" }, answer: { confirm: true } },
        ]);

        const again = await browser.post(path, { csrf: csrfOf(page), action: "confirm" });
        expect(again.status).toBe(409);
        const againText = await again.text();
        expect(againText).toContain("Already confirmed");
        expect(againText).toContain("Deleted my-app.");
        expect((await browser.get(path)).status).toBe(409);
        expect(apps.acted).toHaveLength(1);
        expect(apps.calls).toHaveLength(2);
      });

      test("another user who opens the link learns nothing and cannot answer it", async () => {
        const path = await linkFor(owner, "delete_tool", { address: "secret-plans" });
        const intruder = await signedIn(other);
        const seen = await intruder.get(path);
        expect(seen.status).toBe(404);
        const unknown = await intruder.get("/confirm/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
        expect(unknown.status).toBe(404);
        // The same page as an id that does not exist at all.
        expect(await seen.text()).toBe(await unknown.text());
        const page = await (await intruder.get("/")).text();
        const posted = await intruder.post(path, { csrf: csrfOf(page), action: "confirm" });
        expect(posted.status).toBe(404);
        expect(await posted.text()).not.toContain("secret-plans");
        expect(apps.acted).toEqual([]);
        // Still open for its owner.
        expect((await (await signedIn(owner)).get(path)).status).toBe(200);
      });

      test("Cancel changes nothing, and the link cannot be confirmed afterwards", async () => {
        const path = await linkFor(owner, "delete_tool", { address: "my-app" });
        const browser = await signedIn(owner);
        const cancelled = await answer(browser, path, { action: "cancel" });
        expect(cancelled.status).toBe(200);
        expect(cancelled.text).toContain("Nothing was changed.");
        const page = await (await browser.get("/")).text();
        const late = await browser.post(path, { csrf: csrfOf(page), action: "confirm" });
        expect(late.status).toBe(409);
        expect(await late.text()).toContain("This was cancelled");
        expect(apps.calls).toHaveLength(1);
        expect(apps.acted).toEqual([]);
      });

      test("an expired confirmation is refused and the service is not called", async () => {
        const client = await connectClient(hatch, owner.accessToken);
        const result = await client.callTool({ name: "delete_tool", arguments: { address: EXPIRED_ADDRESS } });
        await client.close();
        const action = (result.structuredContent as { userAction: { url: string; expiresAt: string } }).userAction;
        expect(Date.parse(action.expiresAt)).toBeLessThan(Date.now());
        const path = new URL(action.url).pathname;
        const browser = await signedIn(owner);
        const shown = await browser.get(path);
        expect(shown.status).toBe(410);
        expect(await shown.text()).toContain("This confirmation has expired. Nothing was changed.");
        const page = await (await browser.get("/")).text();
        expect((await browser.post(path, { csrf: csrfOf(page), action: "confirm" })).status).toBe(410);
        expect(apps.calls).toHaveLength(1);
        expect(apps.acted).toEqual([]);
      });

      test("a form without its CSRF token is refused and the confirmation stays open", async () => {
        const path = await linkFor(owner, "delete_tool", { address: "my-app" });
        const browser = await signedIn(owner);
        expect((await browser.post(path, { action: "confirm" })).status).toBe(403);
        expect((await browser.post(path, { action: "confirm", csrf: "forged" })).status).toBe(403);
        expect(apps.acted).toEqual([]);
        expect((await answer(browser, path)).status).toBe(200);
        expect(apps.acted).toHaveLength(1);
      });

      test("five confirmations sent at once: exactly one acts", async () => {
        const path = await linkFor(owner, "delete_tool", { address: "my-app" });
        const browser = await signedIn(owner);
        const csrf = csrfOf(await (await browser.get(path)).text());
        const statuses = await Promise.all(
          [1, 2, 3, 4, 5].map(async () => (await browser.post(path, { csrf, action: "confirm" })).status),
        );
        expect(statuses.sort()).toEqual([200, 409, 409, 409, 409]);
        expect(apps.acted).toHaveLength(1);
      });

      test("the answer acts under the asking client's grant: once it is disconnected, nothing can be confirmed", async () => {
        const user = await userWithToken(hatch);
        const path = await linkFor(user, "delete_tool", { address: "my-app" });
        await hatch.gateway.auth.revokeGrant(user.grantId, "user");
        const browser = await signedIn(user);
        // Withdrawn before any button: the page itself says so and offers no form.
        const shown = await browser.get(path);
        expect(shown.status).toBe(403);
        const text = await shown.text();
        expect(text).toContain("This request was withdrawn");
        expect(text).not.toContain('name="action"');
        const refused = await browser.post(path, { csrf: csrfOf(text), action: "confirm" });
        expect(refused.status).toBe(403);
        expect(await refused.text()).toContain("has been disconnected from your account");
        expect(apps.calls).toHaveLength(1);
        expect(apps.acted).toEqual([]);
      });

      test("a read-only grant cannot confirm a change", async () => {
        const user = await userWithToken(hatch, { readOnly: true });
        const identity = await hatch.gateway.auth.identityForGrant(user.grantId);
        if (!identity) throw new Error("grant not found");
        // A read-only client never gets this far through /mcp (the gateway refuses delete_tool first), so the
        // question is stored directly: the page must refuse it on its own.
        const input = { address: "my-app" };
        const question = buildQuestion(
          STAND_IN_CONFIRM_KEY,
          { sub: user.id, tool: "delete_tool", input },
          { message: "Delete my-app?", properties: { confirm: { type: "boolean" } }, fallback: "link" },
        );
        const client = { kind: "cli" as const, name: "hatch-cli", elicitation: { form: false, url: false } };
        const { url } = await hatch.gateway.confirmations.open({
          caller: { identity, client, requestId: "r", traceparent: childTraceparent(null) },
          contract: delete_tool,
          input,
          question,
        });
        const refused = await answer(await signedIn(user), new URL(url).pathname);
        expect(refused.status).toBe(403);
        expect(refused.text).toContain("read-only access");
        expect(apps.calls).toEqual([]);
      });

      test("a question with several fields: the checkbox and the text reach the service as the answer", async () => {
        const path = await linkFor(owner, "share", { address: "my-app", visibility: "public" });
        const browser = await signedIn(owner);
        const page = await (await browser.get(path)).text();
        expect(page).toContain('<input type="checkbox" name="f.aiDiscoverable" value="true">');
        expect(page).toContain('<input type="text" name="f.note" value="">');
        // In the order the service asked them.
        expect(page.indexOf("f.aiDiscoverable")).toBeLessThan(page.indexOf("f.note"));
        const typo = await answer(browser, path, {
          action: "confirm",
          "f.aiDiscoverable": "true",
          "f.note": "launch day",
          "f.days": "a week",
        });
        expect(typo.status).toBe(400);
        expect(typo.text).toContain("Days to stay public: enter a whole number.");
        expect(typo.text).toContain('name="f.note" value="launch day"');
        expect(apps.calls).toHaveLength(1);

        const done = await answer(browser, path, {
          action: "confirm",
          "f.aiDiscoverable": "true",
          "f.note": "launch day",
          "f.days": "7",
        });
        expect(done.status).toBe(200);
        expect(done.text).toContain("my-app is public now and AI assistants can find it.");
        expect(apps.acted.map((a) => a.answer)).toEqual([{ aiDiscoverable: true, note: "launch day", days: 7 }]);
      });

      test("confirmations a day past expiry are swept; live ones stay", async () => {
        const ancient = await linkFor(owner, "delete_tool", { address: ANCIENT_ADDRESS });
        const live = await linkFor(owner, "delete_tool", { address: "my-app" });
        const browser = await signedIn(owner);
        expect((await browser.get(ancient)).status).toBe(410);
        await hatch.gateway.sweep();
        expect((await browser.get(ancient)).status).toBe(404);
        expect((await browser.get(live)).status).toBe(200);
      });
    });

    describe("the service's own check of the confirm token (runtime, on the bus)", () => {
      test("a token cannot be used for other input or by another user; an expired one is refused; each works once", async () => {
        const input = { address: "my-app" };
        await linkFor(owner, "delete_tool", input);
        const token = apps.asked[0]!.confirm;
        const otherInput = await onBus(owner, { address: "other-app" }, { answer: { confirm: true }, confirm: token });
        expect(otherInput).toEqual({
          ok: false,
          error: { code: "invalid_input", message: expect.stringContaining("another user, tool or input") },
        });
        const otherUser = await onBus(other, input, { answer: { confirm: true }, confirm: token });
        expect(otherUser).toEqual({
          ok: false,
          error: { code: "invalid_input", message: expect.stringContaining("another user, tool or input") },
        });
        const forged = await onBus(owner, input, { answer: { confirm: true }, confirm: `${token.split(".")[0]}.AAAA` });
        expect(forged).toMatchObject({ ok: false, error: { code: "invalid_input" } });
        expect(apps.calls).toHaveLength(1);

        await linkFor(owner, "delete_tool", { address: EXPIRED_ADDRESS });
        const expired = await onBus(
          owner,
          { address: EXPIRED_ADDRESS },
          { answer: { confirm: true }, confirm: apps.asked[1]!.confirm },
        );
        expect(expired).toMatchObject({
          ok: false,
          error: { code: "invalid_input", message: expect.stringContaining("expired") },
        });

        expect(await onBus(owner, input, { answer: { confirm: true }, confirm: token })).toMatchObject({ ok: true });
        expect(await onBus(owner, input, { answer: { confirm: true }, confirm: token })).toMatchObject({
          ok: false,
          error: { code: "conflict" },
        });
        expect(apps.acted).toHaveLength(1);
      });
    });
  });
}
