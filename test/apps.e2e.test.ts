import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { Browser } from "../gateway/test/oauth-harness.ts";
import { csrfOf } from "../gateway/test/support.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, connectFormClient, textOf, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

// The apps tools through the gateway with the SDK's real Client: publish (inline and manifest), versions,
// sharing, rollback, delete, stats and the reference, with ownership checked in the service.

const page = (title: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1></body></html>`;
const sha256 = (bytes: Uint8Array | string) => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");

for (const mode of MODES) {
  describe(`apps tools (${mode})`, () => {
    let hatch: TestHatch;
    let alice: Client;
    let bob: Client;
    let aliceEmail: string;
    let bobEmail: string;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      const a = await userWithToken(hatch, { name: "Alice" });
      const b = await userWithToken(hatch, { name: "Bob" });
      aliceEmail = a.email;
      bobEmail = b.email;
      alice = await connectClient(hatch, a.accessToken);
      bob = await connectClient(hatch, b.accessToken);
    }, 60_000);
    afterAll(async () => {
      await alice?.close();
      await bob?.close();
      await hatch?.stop();
    });

    test("creating without a name and visibility asks the AI to ask the user; nothing is created", async () => {
      const result = await alice.callTool({
        name: "publish",
        arguments: { files: [{ path: "index.html", content: page("Draft"), encoding: "utf8" }] },
      });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({
        status: "needs_user",
        userAction: { kind: "ask_user", fields: ["name", "visibility"] },
      });
      expect(textOf(result)).toContain("Ask the user");
      const list = await callOk(alice, "list_tools", {});
      expect(list.apps).toEqual([]);
    });

    test("inline publish creates the app with an address made from its name; a republish is version 2", async () => {
      const first = await callOk(alice, "publish", {
        name: "Todo List!",
        visibility: "private",
        files: [{ path: "index.html", content: page("v1"), encoding: "utf8" }],
      });
      expect(first).toMatchObject({ status: "published", address: "todo-list", version: 1 });
      expect(first.url).toBe(`${hatch.appHostUrl.replace("//", "//todo-list.")}/`);
      const second = await callOk(alice, "publish", {
        address: "todo-list",
        files: [
          { path: "index.html", content: page("v2"), encoding: "utf8" },
          {
            path: "logo.png",
            content: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 255]).toString("base64"),
            encoding: "base64",
          },
        ],
      });
      expect(second).toMatchObject({ status: "published", address: "todo-list", version: 2 });
      // Flags that are false (shared with me, paused, AI-discoverable) are left out; the name and url are in the text.
      const list = await alice.callTool({ name: "list_tools", arguments: {} });
      expect(list.structuredContent).toEqual({
        apps: [{ address: "todo-list", visibility: "private", currentVersion: 2, opens7d: 0 }],
      });
      expect(textOf(list)).toContain(`- Todo List! (todo-list): ${second.url} — private, v2 of `);
    });

    test("a client with form elicitation asks the user for name and visibility itself", async () => {
      const answers = { name: "Form Made", visibility: "public" };
      const { client, asked } = await connectFormClient(hatch, (await userWithToken(hatch)).accessToken, () => ({
        action: "accept",
        content: answers,
      }));
      const done = await callOk(client, "publish", {
        files: [{ path: "index.html", content: page("form"), encoding: "utf8" }],
      });
      expect(asked).toEqual(["This publishes a new app. What should it be called, and who may open it?"]);
      expect(done).toMatchObject({ status: "published", address: "form-made", version: 1 });
      const list = await callOk(client, "list_tools", {});
      expect(list.apps).toEqual([expect.objectContaining({ address: "form-made", visibility: "public" })]);
      await client.close();
    });

    test("expectedVersion refuses a publish when another came first", async () => {
      const result = await alice.callTool({
        name: "publish",
        arguments: {
          address: "todo-list",
          expectedVersion: 1,
          files: [{ path: "index.html", content: page("late"), encoding: "utf8" }],
        },
      });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain("another publish came first");
      expect(textOf(result)).toContain("(conflict)");
      const ok = await callOk(alice, "publish", {
        address: "todo-list",
        expectedVersion: 2,
        files: [{ path: "index.html", content: page("v3"), encoding: "utf8" }],
      });
      expect(ok.version).toBe(3);
    });

    test("bad folders are refused with what to fix, and nothing is stored", async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ files: [{ path: "main.html", content: page("x"), encoding: "utf8" }] }, "no index.html at its root"],
        [
          {
            files: [
              { path: "index.html", content: "x", encoding: "utf8" },
              { path: "service.json", content: "{nope", encoding: "utf8" },
            ],
          },
          "service.json is not valid JSON",
        ],
        [
          {
            files: [
              { path: "index.html", content: "x", encoding: "utf8" },
              { path: "service.json", content: '{"spaa": true}', encoding: "utf8" },
            ],
          },
          "Known keys: spa, notFound",
        ],
        [
          {
            files: [
              { path: "index.html", content: "x", encoding: "utf8" },
              { path: "service.json", content: '{"notFound": "missing.html"}', encoding: "utf8" },
            ],
          },
          "no such file",
        ],
        [{ files: [{ path: "../etc/passwd", content: "x", encoding: "utf8" }] }, "no .. parts"],
        [{ files: [{ path: "index.html", content: "@@@", encoding: "base64" }] }, "not valid base64"],
        [
          {
            files: [
              { path: "index.html", content: "a", encoding: "utf8" },
              { path: "index.html", content: "b", encoding: "utf8" },
            ],
          },
          "listed twice",
        ],
        [
          {
            files: [{ path: "index.html", content: "x", encoding: "utf8" }],
            manifest: [{ path: "index.html", sha256: sha256("x"), size: 1 }],
          },
          "Give exactly one of upload: true",
        ],
        [
          { manifest: [{ path: "index.html", sha256: sha256("x"), size: 30 * 1024 * 1024 }] },
          "one file may be at most 25 MB",
        ],
      ];
      for (const [args, message] of cases) {
        const result = await alice.callTool({ name: "publish", arguments: { address: "todo-list", ...args } });
        expect(result.isError).toBe(true);
        expect(textOf(result)).toContain(message);
      }
      const list = await callOk(alice, "list_tools", {});
      expect(list.apps).toEqual([expect.objectContaining({ address: "todo-list", currentVersion: 3 })]);
    });

    test("a manifest publish asks only for missing files, checks each upload, and never asks twice", async () => {
      const files = new Map<string, Uint8Array<ArrayBuffer>>([
        ["index.html", new TextEncoder().encode(page("big"))],
        ["assets/app-1a2b3c4d.js", new TextEncoder().encode("console.log('app');".repeat(50))],
        ["assets/logo.bin", new Uint8Array(Array.from({ length: 4096 }, (_, i) => i % 256))],
      ]);
      const manifest = [...files].map(([path, bytes]) => ({ path, sha256: sha256(bytes), size: bytes.byteLength }));
      const first = await callOk(alice, "publish", { name: "Big App", visibility: "private", manifest });
      expect(first.status).toBe("needs_upload");
      const missing = first.missing as string[];
      const urlOf = (path: string) => `${first.uploadUrl}${path}`;
      expect(missing.sort()).toEqual([...files.keys()].sort());

      const wrong = await fetch(urlOf(missing[0]!), {
        method: "PUT",
        body: new Blob([new Uint8Array(files.get(missing[0]!)!.byteLength)]),
      });
      expect(wrong.status).toBe(400);
      expect(await wrong.text()).toContain("hash");
      for (const path of missing) {
        const put = await fetch(urlOf(path), { method: "PUT", body: new Blob([files.get(path)!]) });
        expect(put.status).toBe(201);
      }
      const replay = await fetch(urlOf(missing[0]!), { method: "PUT", body: new Blob([files.get(missing[0]!)!]) });
      expect(replay.status).toBe(200);

      const done = await callOk(alice, "publish", { uploadId: first.uploadId });
      expect(done).toMatchObject({ status: "published", address: "big-app", version: 1 });
      const gone = await fetch(urlOf(missing[0]!), { method: "PUT", body: new Blob([files.get(missing[0]!)!]) });
      expect(gone.status).toBe(410);

      // Republish with one changed file: only that file is asked for.
      files.set("index.html", new TextEncoder().encode(page("big v2")));
      const changed = [...files].map(([path, bytes]) => ({ path, sha256: sha256(bytes), size: bytes.byteLength }));
      const again = await callOk(alice, "publish", { address: "big-app", manifest: changed });
      expect(again.status).toBe("needs_upload");
      expect(again.missing).toEqual(["index.html"]);
      expect(
        (await fetch(`${again.uploadUrl}index.html`, { method: "PUT", body: new Blob([files.get("index.html")!]) }))
          .status,
      ).toBe(201);
      // Calling again with the same manifest (as before upload ids) finishes too: nothing is missing any more.
      expect(await callOk(alice, "publish", { address: "big-app", manifest: changed })).toMatchObject({
        status: "published",
        version: 2,
      });
    });

    test("knowing another user's file hash is not enough: that content must be uploaded again", async () => {
      // Alice's big-app holds assets/logo.bin; Eve lists the same hash without having the bytes.
      const logo = new Uint8Array(Array.from({ length: 4096 }, (_, i) => i % 256));
      const index = new TextEncoder().encode(page("bob"));
      const manifest = [
        { path: "index.html", sha256: sha256(index), size: index.byteLength },
        { path: "stolen.bin", sha256: sha256(logo), size: logo.byteLength },
      ];
      const eve = await connectClient(hatch, (await userWithToken(hatch, { name: "Eve" })).accessToken);
      const asked = await callOk(eve, "publish", { name: "Bobs", visibility: "private", manifest });
      expect(asked.status).toBe("needs_upload");
      expect((asked.missing as string[]).sort()).toEqual(["index.html", "stolen.bin"]);
      for (const path of asked.missing as string[]) {
        const body = path === "index.html" ? index : logo;
        expect((await fetch(`${asked.uploadUrl}${path}`, { method: "PUT", body: new Blob([body]) })).status).toBe(201);
      }
      expect(await callOk(eve, "publish", { uploadId: asked.uploadId })).toMatchObject({
        status: "published",
        address: "bobs",
      });
      // Now that Eve has had the bytes, her own republish does not ask for them again.
      expect(await callOk(eve, "publish", { address: "bobs", manifest })).toMatchObject({
        status: "published",
        version: 2,
      });
      await eve.close();
    });

    test("another user's app is not found for every tool, never leaked", async () => {
      const calls: [string, Record<string, unknown>][] = [
        ["publish", { address: "todo-list", files: [{ path: "index.html", content: "x", encoding: "utf8" }] }],
        ["share", { address: "todo-list", visibility: "public" }],
        ["rollback", { address: "todo-list" }],
        ["delete_tool", { address: "todo-list" }],
        ["tool_stats", { address: "todo-list" }],
      ];
      for (const [name, args] of calls) {
        const result = await bob.callTool({ name, arguments: args });
        expect(result.isError).toBe(true);
        expect(textOf(result)).toContain('You have no app at the address "todo-list"');
      }
      const missing = await bob.callTool({ name: "rollback", arguments: { address: "never-existed" } });
      expect(textOf(missing)).toContain('You have no app at the address "never-existed"');
      expect((await callOk(bob, "list_tools", {})).apps).toEqual([]);
    });

    test("share: people by email show the app to them; aiDiscoverable needs public", async () => {
      const shared = await callOk(alice, "share", {
        address: "todo-list",
        visibility: "people",
        add: [bobEmail.toUpperCase()],
      });
      // aiDiscoverable false is left out.
      expect(shared).toEqual({ status: "updated", visibility: "people", people: [bobEmail.toLowerCase()] });
      const bobs = await bob.callTool({ name: "list_tools", arguments: { include: "shared" } });
      expect((bobs.structuredContent as { apps: unknown[] }).apps).toEqual([
        expect.objectContaining({ address: "todo-list", sharedBy: aliceEmail }),
      ]);
      expect(textOf(bobs)).toContain(`shared by ${aliceEmail}`);

      const refused = await alice.callTool({
        name: "share",
        arguments: { address: "todo-list", aiDiscoverable: true },
      });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toContain("aiDiscoverable can be on only for public apps");

      const removed = await callOk(alice, "share", { address: "todo-list", remove: [bobEmail] });
      expect(removed.people).toEqual([]);
      expect((await callOk(bob, "list_tools", { include: "shared" })).apps).toEqual([]);
    });

    test("share: lookalike, zero-width and a@b..c emails are refused with the reason; nothing is shared", async () => {
      const cases: [string, string][] = [
        ["a@b..c", "two dots in a row"],
        [bobEmail.replace("@", "\u200B@"), "invisible or control character"],
        [bobEmail.replace("e", "\u0435"), "plain ASCII"], // Cyrillic е
      ];
      for (const [email, reason] of cases) {
        const refused = await alice.callTool({
          name: "share",
          arguments: { address: "todo-list", visibility: "people", add: [email] },
        });
        expect(refused.isError).toBe(true);
        expect(textOf(refused)).toContain(reason);
      }
      expect((await callOk(bob, "list_tools", { include: "shared" })).apps).toEqual([]);
    });

    test("share: making an app public asks the user; only their yes changes it", async () => {
      const viaAi = await callOk(alice, "share", { address: "todo-list", visibility: "public" });
      expect(viaAi.status).toBe("needs_user");
      expect((await callOk(alice, "list_tools", {})).apps).toContainEqual(
        expect.objectContaining({ address: "todo-list", visibility: "people" }),
      );

      const token = (await userWithToken(hatch, { name: "Carol" })).accessToken;
      const { client } = await connectFormClient(hatch, token, () => ({
        action: "accept",
        content: { name: "Carol's", visibility: "private" },
      }));
      await callOk(client, "publish", { files: [{ path: "index.html", content: page("carol"), encoding: "utf8" }] });
      await client.close();
      const yes = await connectFormClient(hatch, token, () => ({ action: "accept", content: { confirm: true } }));
      const done = await callOk(yes.client, "share", {
        address: "carol-s",
        visibility: "public",
        aiDiscoverable: true,
      });
      expect(yes.asked[0]).toContain("public");
      expect(done).toMatchObject({ status: "updated", visibility: "public", aiDiscoverable: true });
      await yes.client.close();
    });

    test("rollback lists versions, makes an older one current, and says when it already is", async () => {
      const listed = await callOk(alice, "rollback", { address: "todo-list" });
      expect(listed.status).toBe("choose_version");
      // The versions by number (the text gives each one's date, publisher and files).
      expect(listed).toMatchObject({ currentVersion: 3, versions: [3, 2, 1] });
      const back = await callOk(alice, "rollback", { address: "todo-list", version: 1 });
      expect(back).toMatchObject({ status: "rolled_back", currentVersion: 1, previousVersion: 3 });
      expect(await callOk(alice, "rollback", { address: "todo-list", version: 1 })).toMatchObject({
        status: "already_current",
      });
      const missing = await alice.callTool({ name: "rollback", arguments: { address: "todo-list", version: 9 } });
      expect(textOf(missing)).toContain("has no version 9 (its versions: 3, 2, 1)");
      expect((await callOk(alice, "list_tools", {})).apps).toContainEqual(
        expect.objectContaining({ address: "todo-list", currentVersion: 1 }),
      );
    });

    test("tool_stats reports the last days for the owner", async () => {
      const stats = await callOk(alice, "tool_stats", { address: "todo-list", days: 3 });
      // A day without opens is left out of opensByDay; the text says every day.
      expect(stats).toEqual({ address: "todo-list", totalOpens: 0, totalUniqueViewers: 0, opensByDay: {} });
      const text = textOf(await alice.callTool({ name: "tool_stats", arguments: { address: "todo-list", days: 3 } }));
      for (const n of [2, 1, 0])
        expect(text).toContain(`${new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10)}: 0 opens`);
    });

    test("delete asks the user; on their yes the app is gone and its address is never given out again", async () => {
      const token = (await userWithToken(hatch)).accessToken;
      const create = await connectFormClient(hatch, token, () => ({
        action: "accept",
        content: { name: "Doomed", visibility: "private" },
      }));
      await callOk(create.client, "publish", {
        files: [{ path: "index.html", content: page("doomed"), encoding: "utf8" }],
      });
      await create.client.close();

      const no = await connectFormClient(hatch, token, () => ({ action: "decline" }));
      const declined = await no.client.callTool({ name: "delete_tool", arguments: { address: "doomed" } });
      expect(textOf(declined)).toContain("nothing was changed");
      await no.client.close();

      const yes = await connectFormClient(hatch, token, () => ({ action: "accept", content: { confirm: true } }));
      expect(await callOk(yes.client, "delete_tool", { address: "doomed" })).toEqual({
        status: "deleted",
        address: "doomed",
      });
      expect(yes.asked[0]).toContain("can never be used again");
      expect((await callOk(yes.client, "list_tools", {})).apps).toEqual([]);
      const gone = await yes.client.callTool({ name: "rollback", arguments: { address: "doomed" } });
      expect(textOf(gone)).toContain("You have no app");
      await yes.client.close();

      const reborn = await connectFormClient(hatch, token, () => ({
        action: "accept",
        content: { name: "Doomed", visibility: "private" },
      }));
      expect(
        await callOk(reborn.client, "publish", {
          files: [{ path: "index.html", content: page("again"), encoding: "utf8" }],
        }),
      ).toMatchObject({ address: "doomed-2" });
      await reborn.client.close();
    });

    test("without form elicitation, delete gives a confirm link; the signed-in owner confirms it in the browser", async () => {
      const user = await userWithToken(hatch);
      const client = await connectClient(hatch, user.accessToken);
      await callOk(client, "publish", {
        name: "Linked",
        visibility: "private",
        files: [{ path: "index.html", content: page("linked"), encoding: "utf8" }],
      });
      const asked = await callOk(client, "delete_tool", { address: "linked" });
      const link = (asked.userAction as { url: string }).url;
      expect(asked).toMatchObject({ status: "needs_user", address: "linked", userAction: { kind: "open_link" } });
      expect(link.startsWith(`${hatch.baseUrl}/confirm/`)).toBe(true);
      expect((await callOk(client, "list_tools", {})).apps).toEqual([expect.objectContaining({ address: "linked" })]);

      const path = new URL(link).pathname;
      const browser = new Browser((p, init) => fetch(`${hatch.baseUrl}${p}`, { ...init, redirect: "manual" }));
      expect((await browser.signIn(user.email, "correct horse battery")).status).toBe(303);
      const confirmPage = await browser.get(path);
      expect(await confirmPage.text()).toContain("can never be used again");
      const done = await browser.post(path, {
        csrf: csrfOf(await (await browser.get(path)).text()),
        action: "confirm",
      });
      expect(done.status).toBe(200);
      expect(await done.text()).toContain("Deleted linked");
      expect((await callOk(client, "list_tools", {})).apps).toEqual([]);
      await client.close();
    });

    test("service_docs returns the same reference as GET /mcp/docs, once (as its text)", async () => {
      const result = await alice.callTool({ name: "service_docs", arguments: {} });
      const docs = result.structuredContent as { url: string; content?: string };
      expect(docs.url).toBe(`${hatch.baseUrl}/mcp/docs`);
      expect(docs.content).toBeUndefined();
      const markdown = await (await fetch(`${hatch.baseUrl}/mcp/docs.md`)).text();
      expect(textOf(result)).toBe(markdown);
      expect(markdown).toContain("## service.json");
      expect(markdown).toContain("| files in one version | 20,000 |");
      const htmlPage = await fetch(`${hatch.baseUrl}/mcp/docs`, { headers: { Accept: "text/html" } });
      expect(htmlPage.headers.get("content-type")).toContain("text/html");
      expect(await htmlPage.text()).toMatch(/<h2[^>]*>service\.json<\/h2>/);
      const one = await alice.callTool({ name: "service_docs", arguments: { topic: "service_json" } });
      expect(textOf(one)).toBe(
        await (await fetch(`${hatch.baseUrl}/mcp/docs?topic=service_json&format=markdown`)).text(),
      );
    });
  });
}
