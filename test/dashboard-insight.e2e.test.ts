import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppsService } from "@hatch/apps";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { createHash } from "node:crypto";
import { appLogs, blobs, bucketFiles, documents } from "../services/apps/src/db/schema.ts";
import { seedApp } from "../services/apps/test/support/seed.ts";
import { csrfOf, signedInJar } from "./support/cookies.ts";
import { eventually } from "./support/eventually.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";
import { readEvents } from "./support/sse.ts";

// An app's logs and data pages over real HTTP, as a browser without JavaScript (and EventSource for the live tail):
// the owner sees them; for the data an organization manager too; a member without rights and a stranger are refused
// or told nothing (404); documents page on, one document shows whole, delete removes it, export is JSON Lines.

const PASSWORD = "correct horse battery";
const CONFIG = {
  collections: { todos: { read: "anyone", create: "signed_in" } },
  buckets: { photos: { create: "signed_in" } },
};
// A 1×1 PNG, a text file and an SVG (which can carry script: never previewed as an image).
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);
const FILES = [
  { id: "png1", name: "dot.png", contentType: "image/png", bytes: PNG },
  { id: "txt1", name: "notes.txt", contentType: "text/plain", bytes: Buffer.from("first line\n<b>not bold</b>") },
  {
    id: "svg1",
    name: "logo.svg",
    contentType: "image/svg+xml",
    bytes: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'),
  },
];
const STACK = "Error: boom\n    at handler (api/index.js:3:11)\n    at serve (api/index.js:9:5)";

for (const mode of MODES) {
  describe(`dashboard logs and data (${mode})`, () => {
    let hatch: TestHatch;
    let apps: AppsService;
    let appId = "";
    const emails: Record<"owner" | "manager" | "member" | "stranger", string> = {
      owner: "",
      manager: "",
      member: "",
      stranger: "",
    };
    const address = `insight-${mode}`;
    const clients: Client[] = [];

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      apps = hatch.services.get("apps") as AppsService;
      const [a, b, c, d] = await Promise.all(
        ["Olive", "Manny", "Mel", "Stan"].map((name) => userWithToken(hatch, { name })),
      );
      Object.assign(emails, { owner: a!.email, manager: b!.email, member: c!.email, stranger: d!.email });
      const [owner, manager, member] = await Promise.all([a!, b!, c!].map((u) => connectClient(hatch, u.accessToken)));
      clients.push(owner!, manager!, member!);
      const org = await callOk<{ org: { id: string } }>(owner!, "org_setup", { action: "create", name: `Ins ${mode}` });
      await callOk(owner!, "org_invite", { emails: [b!.email], role: "manager" });
      await callOk(owner!, "org_invite", { emails: [c!.email], role: "member" });
      for (const client of [manager!, member!]) {
        const mine = await callOk<{ invitationsForMe: { invitationId: string }[] }>(client, "org");
        await callOk(client, "org_setup", { action: "accept", invitationId: mine.invitationsForMe[0]!.invitationId });
      }
      const app = await seedApp(apps.context, {
        address,
        owner: { id: a!.id, email: a!.email },
        accountId: org.org.id,
        visibility: "org",
        files: { "index.html": "<h1>Todos</h1>" },
        config: CONFIG,
      });
      appId = app.id;
      const at = (i: number) => new Date(Date.UTC(2025, 0, 1, 12, 0, i));
      await apps.context.db.insert(documents).values(
        Array.from({ length: 30 }, (_, i) => ({
          appId,
          collection: "todos",
          id: `todo${String(i + 1).padStart(2, "0")}`,
          data: { text: `Item ${i + 1}`, note: i === 0 ? "<script>alert(1)</script>" : "plain" },
          bytes: 40,
          createdBy: a!.id,
          createdByEmail: a!.email,
          createdAt: at(i),
          updatedAt: at(i),
        })),
      );
      for (const file of FILES) {
        const sha256 = createHash("sha256").update(file.bytes).digest("hex");
        await apps.context.blobs.put(sha256, file.bytes);
        await apps.context.db.insert(blobs).values({ sha256, size: file.bytes.length }).onConflictDoNothing();
        await apps.context.db.insert(bucketFiles).values({
          id: `${file.id}-${mode}`,
          appId,
          bucket: "photos",
          name: file.name,
          contentType: file.contentType,
          size: file.bytes.length,
          sha256,
          createdByEmail: a!.email,
          createdBy: a!.id,
        });
      }
      await apps.context.db.insert(appLogs).values([
        { appId, level: "info", message: "started the day" },
        { appId, level: "debug", message: "cache warm" },
        { appId, level: "warn", message: "slow answer from the weather API" },
        { appId, level: "error", message: `GET /api/boom: uncaught ${STACK}` },
        { appId, level: "error", message: "payment declined for order 7" },
      ]);
    }, 120_000);
    afterAll(async () => {
      for (const client of clients) await client.close();
      await hatch?.stop();
    });

    const signedIn = (email: string) => signedInJar(hatch.baseUrl, email, PASSWORD);
    /** The activity log's lines as org_activity's text says them (each with its client). */
    const activity = async () =>
      textOf(await clients[0]!.callTool({ name: "org_activity", arguments: { limit: 50 } }))
        .split("\n")
        .slice(1);
    const page = (path: string) => `${hatch.baseUrl}/dashboard/apps/${address}${path}`;

    test("the owner reads the logs: every level, a level filter, a search, uncaught errors with their stack", async () => {
      const jar = await signedIn(emails.owner);
      const all = await jar.fetch(page("/logs"));
      expect(all.status).toBe(200);
      const body = await all.text();
      for (const text of ["started the day", "cache warm", "slow answer", "payment declined"])
        expect(body).toContain(text);
      // The stack is under the error's first line, in its own block.
      expect(body).toContain("<summary>Stack</summary>");
      expect(body).toContain("at handler (api/index.js:3:11)");
      expect(all.headers.get("content-security-policy")).toContain("connect-src 'self'");

      const errors = await (await jar.fetch(page("/logs?level=warn"))).text();
      expect(errors).toContain("slow answer");
      expect(errors).not.toContain("cache warm");
      expect(errors).not.toContain("started the day");

      const search = await (await jar.fetch(page("/logs?q=PAYMENT"))).text();
      expect(search).toContain("payment declined");
      expect(search).not.toContain("slow answer");

      const uncaught = await (await jar.fetch(page("/logs?uncaught=1"))).text();
      expect(uncaught).toContain("GET /api/boom: uncaught Error: boom");
      expect(uncaught).not.toContain("payment declined");
    });

    test("the live tail sends a line logged after it started, filtered as the page", async () => {
      const jar = await signedIn(emails.owner);
      const newest = Number(/data-newest="(\d+)"/.exec(await (await jar.fetch(page("/logs"))).text())?.[1]);
      expect(newest).toBeGreaterThan(0);
      const stream = await jar.fetch(page(`/logs/stream?level=error&after=${newest}`));
      expect(stream.status).toBe(200);
      expect(stream.headers.get("content-type")).toContain("text/event-stream");
      await apps.context.db.insert(appLogs).values([
        { appId, level: "info", message: "not an error" },
        { appId, level: "error", message: "fresh failure" },
      ]);
      const events = await readEvents(stream, (seen) => seen.some((e) => e.data?.includes("fresh failure")));
      const lines = events.filter((e) => e.id).map((e) => JSON.parse(e.data!) as { message: string; level: string });
      expect(lines.map((l) => l.message)).toEqual(["fresh failure"]);
    });

    test("logs are the owner's only: a manager is refused, a member and a stranger are told nothing", async () => {
      const manager = await signedIn(emails.manager);
      const refused = await manager.fetch(page("/logs"));
      expect(refused.status).toBe(403);
      expect(await refused.text()).toContain(`Only the owner of ${address} may read its logs`);
      expect((await manager.fetch(page("/logs/stream"))).status).toBe(403);
      const member = await signedIn(emails.member);
      expect((await member.fetch(page("/logs"))).status).toBe(403);
      const stranger = await signedIn(emails.stranger);
      const hidden = await stranger.fetch(page("/logs"));
      expect(hidden.status).toBe(404);
      expect(await hidden.text()).not.toContain("payment declined");
      expect((await stranger.fetch(page("/logs/stream"))).status).toBe(404);
    });

    test("data: collections with count and rules, buckets with count; documents a page at a time, newest first", async () => {
      const jar = await signedIn(emails.owner);
      const overview = await (await jar.fetch(page("/data"))).text();
      expect(overview).toMatch(/<tr data-collection="todos">.*<td[^>]*>30<\/td>/);
      expect(overview).toContain("read: anyone who can open the app");
      expect(overview).toContain('data-bucket="photos"');

      const first = await jar.fetch(page("/data/todos"));
      expect(first.status).toBe(200);
      const one = await first.text();
      const ids = (text: string) => [...text.matchAll(/<tr data-document="([^"]+)"/g)].map((m) => m[1]);
      expect(ids(one)).toEqual(Array.from({ length: 25 }, (_, i) => `todo${String(30 - i).padStart(2, "0")}`));
      const next = /href="([^"]+)" rel="next"/.exec(one)?.[1]?.replaceAll("&amp;", "&");
      expect(next).toBeDefined();
      const two = await (await jar.fetch(`${hatch.baseUrl}${next}`)).text();
      expect(ids(two)).toEqual(["todo05", "todo04", "todo03", "todo02", "todo01"]);
      expect(two).not.toContain('rel="next"');
      // A user's text is shown as text, never as markup.
      expect(two).not.toContain("<script>alert(1)</script>");

      const doc = await jar.fetch(page("/data/todos/documents/todo01"));
      expect(doc.status).toBe(200);
      const whole = await doc.text();
      expect(whole).toContain("&quot;text&quot;: &quot;Item 1&quot;");
      expect(whole).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    });

    test("export is every document as JSON Lines, for the owner and a manager", async () => {
      for (const email of [emails.owner, emails.manager]) {
        const jar = await signedIn(email);
        const file = await jar.fetch(page("/data/todos/export"));
        expect(file.status).toBe(200);
        expect(file.headers.get("content-type")).toContain("application/jsonl");
        expect(file.headers.get("content-disposition")).toContain(`attachment; filename="${address}-todos.jsonl"`);
        const lines = (await file.text()).trimEnd().split("\n");
        const parsed = lines.map((line) => JSON.parse(line) as { id: string; data: { text: string } });
        expect(parsed.length).toBe(30);
        expect(new Set(parsed.map((d) => d.id)).size).toBe(parsed.length);
        expect(parsed.find((d) => d.id === "todo02")?.data.text).toBe("Item 2");
      }
    });

    test("a member without rights and a stranger read no data and delete nothing", async () => {
      const member = await signedIn(emails.member);
      for (const path of ["/data", "/data/todos", "/data/todos/documents/todo03", "/data/todos/export"])
        expect((await member.fetch(page(path))).status).toBe(403);
      const stranger = await signedIn(emails.stranger);
      for (const path of ["/data", "/data/todos", "/data/todos/documents/todo03", "/data/todos/export"]) {
        const answer = await stranger.fetch(page(path));
        expect(answer.status).toBe(404);
        expect(await answer.text()).not.toContain("Item 3");
      }
      for (const jar of [member, stranger]) {
        const csrf = csrfOf(await (await jar.fetch(`${hatch.baseUrl}/dashboard`)).text());
        const refused = await jar.post(page("/data/todos/documents/todo03/delete"), { csrf });
        expect([403, 404]).toContain(refused.status);
      }
      const owner = await signedIn(emails.owner);
      expect((await owner.fetch(page("/data/todos/documents/todo03"))).status).toBe(200);
    });

    test("delete: without the CSRF field nothing; with it the document goes and the page says so once", async () => {
      const jar = await signedIn(emails.manager);
      const doc = page("/data/todos/documents/todo30");
      const csrf = csrfOf(await (await jar.fetch(doc)).text());
      expect((await jar.post(`${doc}/delete`, {})).status).toBe(403);
      expect((await jar.fetch(doc)).status).toBe(200);
      const done = await jar.post(`${doc}/delete`, { csrf });
      expect(done.status).toBe(303);
      expect(done.headers.get("location")).toBe(`/dashboard/apps/${address}/data/todos`);
      const after = await (await jar.fetch(page("/data/todos"))).text();
      expect(after).toContain("Document todo30 was deleted from todos.");
      expect(after).not.toContain('data-document="todo30"');
      expect((await jar.fetch(doc)).status).toBe(404);
      const again = await jar.post(`${doc}/delete`, { csrf });
      expect(again.status).toBe(404);
      // It lands in the organization's activity log, as done on the dashboard.
      const logged = await eventually(
        async () => (await activity()).find((line) => line.includes("deleted a document of")),
        "the document's deletion in the activity log",
      );
      expect(logged).toContain(`deleted a document of ${address} (${address}): todo30 in todos`);
      expect(logged).toEndWith("(on the dashboard)");
    });

    test("files: a list, an image preview served as an image only, a text preview as text, an SVG as its text", async () => {
      const jar = await signedIn(emails.owner);
      const list = await (await jar.fetch(page("/files/photos"))).text();
      for (const f of FILES) expect(list).toContain(`data-file="${f.id}-${mode}"`);

      const image = await (await jar.fetch(page(`/files/photos/png1-${mode}`))).text();
      expect(image).toContain(`<img src="/dashboard/apps/${address}/files/photos/png1-${mode}/preview"`);
      const bytes = await jar.fetch(page(`/files/photos/png1-${mode}/preview`));
      expect(bytes.status).toBe(200);
      expect(bytes.headers.get("content-type")).toBe("image/png");
      expect(bytes.headers.get("content-security-policy")).toContain("sandbox");
      expect(Buffer.from(await bytes.arrayBuffer()).equals(PNG)).toBe(true);

      const text = await (await jar.fetch(page(`/files/photos/txt1-${mode}`))).text();
      expect(text).toContain("first line\n&lt;b&gt;not bold&lt;/b&gt;");
      expect((await jar.fetch(page(`/files/photos/txt1-${mode}/preview`))).status).toBe(404);

      const svg = await (await jar.fetch(page(`/files/photos/svg1-${mode}`))).text();
      // An SVG is shown as its text, never as an image (it can carry script).
      expect(svg).toContain("&lt;script&gt;alert(1)&lt;/script&gt;&lt;/svg&gt;");
      expect(svg).not.toContain("<script>alert(1)");
      expect(svg).not.toContain("<img");
      expect((await jar.fetch(page(`/files/photos/svg1-${mode}/preview`))).status).toBe(404);
    });

    test("files: a member and a stranger see none and delete none; the manager deletes one", async () => {
      const member = await signedIn(emails.member);
      const stranger = await signedIn(emails.stranger);
      for (const [jar, status] of [
        [member, 403],
        [stranger, 404],
      ] as const) {
        for (const path of ["/files/photos", `/files/photos/png1-${mode}`, `/files/photos/png1-${mode}/preview`])
          expect((await jar.fetch(page(path))).status).toBe(status);
        const csrf = csrfOf(await (await jar.fetch(`${hatch.baseUrl}/dashboard`)).text());
        expect((await jar.post(page(`/files/photos/txt1-${mode}/delete`), { csrf })).status).toBe(status);
      }
      const manager = await signedIn(emails.manager);
      const file = page(`/files/photos/txt1-${mode}`);
      const csrf = csrfOf(await (await manager.fetch(file)).text());
      const done = await manager.post(`${file}/delete`, { csrf });
      expect(done.status).toBe(303);
      expect(done.headers.get("location")).toBe(`/dashboard/apps/${address}/files/photos`);
      const after = await (await manager.fetch(page("/files/photos"))).text();
      expect(after).toContain("notes.txt was deleted from photos.");
      expect(after).not.toContain(`data-file="txt1-${mode}"`);
      expect((await manager.fetch(file)).status).toBe(404);
      const logged = await eventually(
        async () => (await activity()).find((line) => line.includes("deleted a file of")),
        "the file's deletion in the activity log",
      );
      expect(logged).toContain(`deleted a file of ${address} (${address}): txt1-${mode} in photos`);
      expect(logged).toEndWith("(on the dashboard)");
      const overview = await (await manager.fetch(page("/data"))).text();
      expect(overview).toMatch(/<tr data-bucket="photos">.*<td[^>]*>2<\/td>/);
    });
  });
}
