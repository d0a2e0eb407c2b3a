import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppsService } from "@hatch/apps";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { eq } from "drizzle-orm";
import type { Browser } from "playwright-core";
import { appsTable } from "../services/apps/src/db/schema.ts";
import { hasChromium, launchChromium } from "./support/chromium.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { refused } from "./support/orgs.ts";
import { MODES } from "./support/servers.ts";

// Server code end to end: published with the publish tool (which refuses a missing or broken module), answering on
// the app's origin with env.db, its console lines read back with tool_logs by the owner only (a manager who is not
// the owner is refused by name, a stranger learns nothing), with the level filter and the limit. Apps are published
// private and made public in the database, so anonymous requests reach the code without a confirmation round.

type LogsOut = { address: string; lines: { time: string; level: string; message: string }[]; truncated: boolean };

const SERVER = `
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/api/todos" && request.method === "POST") {
      const added = await env.db("todos").add(await request.json());
      console.info("added", added.id);
      return Response.json(added, { status: 201 });
    }
    if (url.pathname === "/api/todos") {
      const page = await env.db("todos").list({ limit: 20 });
      console.debug("listed", page.documents.length);
      return Response.json(page.documents.map((d) => d.title));
    }
    if (url.pathname === "/api/warn") { console.warn("careful"); return new Response("ok"); }
    if (url.pathname === "/api/boom") throw new Error("kaboom");
    return new Response("no route", { status: 404 });
  },
};`;
// Hatch's cookies written the ways a browser still reads as theirs: a space or tab around the name, any case, a
// __Secure-/__Host- prefix, a nameless cookie whose value is sent back as "hatch_viewer=…", the gateway's names.
const HATCH_COOKIES = [
  "hatch_viewer =forged; Path=/",
  "hatch_viewer\t=forged; Path=/",
  " \thatch_viewer= forged; Path=/",
  "HATCH_VIEWER=forged; Path=/",
  "Hatch_Viewer =forged; Path=/api",
  "__Secure-hatch_viewer=forged; Path=/; Secure",
  "=hatch_viewer=forged; Path=/",
  "hatch_session=forged; Path=/",
  "hatch_csrf\t=forged; Path=/",
];
const APP_COOKIES = ["theme=dark; Path=/", "cart =3; Path=/", "hatchling=yes; Path=/"];
const COOKIE_SERVER = `
export default {
  async fetch(request) {
    if (new URL(request.url).pathname === "/api/echo") return new Response(request.headers.get("cookie") ?? "");
    const headers = new Headers({ "content-type": "text/plain" });
    for (const line of ${JSON.stringify([...HATCH_COOKIES, ...APP_COOKIES])}) headers.append("set-cookie", line);
    return new Response("cookies", { headers });
  },
};`;
const FILES = (server = SERVER) => [
  { path: "index.html", content: "<h1>Todos</h1>", encoding: "utf8" },
  { path: "api/index.js", content: server, encoding: "utf8" },
  {
    path: "service.json",
    content: JSON.stringify({
      server: "api/index.js",
      collections: { todos: { read: "anyone", create: "signed_in" } },
    }),
    encoding: "utf8",
  },
];

/** A version of a small app whose module does some work at its top level (a table, as bundled code does). */
const VERSIONED = (n: number) => `
const table = [];
for (let i = 0; i < 20000; i++) table.push({ i, square: i * i, name: "row " + i });
const version = ${n};
export default { fetch: () => Response.json({ version, rows: table.length }) };`;

/**
 * Processes that keep the machine's cores busy (a loaded CI machine), bounded: each ends by itself after a minute
 * and a half, and the test kills them when done.
 */
function burnCores(count: number): { stop(): void } {
  const burners = Array.from({ length: count }, () =>
    Bun.spawn([process.execPath, "-e", "const end = Date.now() + 90000; while (Date.now() < end) {}"], {
      stdout: "ignore",
      stderr: "ignore",
    }),
  );
  return { stop: () => burners.forEach((burner) => burner.kill()) };
}

for (const mode of MODES) {
  describe(`server code (${mode})`, () => {
    let hatch: TestHatch;
    let apps: AppsService;
    let owner: Client, manager: Client, stranger: Client;
    let address = "";
    const origin = () => hatch.appHostUrl.replace("//", `//${address}.`);

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      apps = hatch.services.get("apps") as AppsService;
      const [a, b, c] = await Promise.all(["Olga", "Mick", "Sam"].map((name) => userWithToken(hatch, { name })));
      [owner, manager, stranger] = (await Promise.all(
        [a!, b!, c!].map((user) => connectClient(hatch, user.accessToken)),
      )) as [Client, Client, Client];
      await callOk(owner, "org_setup", { action: "create", name: `Server ${mode}` });
      await callOk(owner, "org_invite", { emails: [b!.email], role: "manager" });
      const mine = await callOk<{ invitationsForMe: { invitationId: string }[] }>(manager, "org");
      await callOk(manager, "org_setup", { action: "accept", invitationId: mine.invitationsForMe[0]!.invitationId });
    }, 90_000);
    afterAll(async () => {
      await Promise.all([owner, manager, stranger].map((client) => client?.close()));
      await hatch?.stop();
    });

    test("publish refuses a server module that is not in the folder, and one that does not compile", async () => {
      const missing = await refused(owner, "publish", {
        name: "Broken",
        visibility: "private",
        files: FILES().filter((f) => f.path !== "api/index.js"),
      });
      expect(missing).toContain(
        'service.json names "api/index.js" as its server code, but the folder has no such file',
      );
      const broken = await refused(owner, "publish", {
        name: "Broken",
        visibility: "private",
        files: FILES("export default {\n  fetch(request {\n}"),
      });
      expect(broken).toContain('The server code "api/index.js" does not compile: SyntaxError');
      expect(broken).toContain("api/index.js line 2");
      expect((await callOk<{ apps: unknown[] }>(owner, "list_tools", {})).apps).toEqual([]);
    });

    test("published server code answers /api with env.db; the module is not served", async () => {
      const done = await callOk<{ address: string }>(owner, "publish", {
        name: `Todos ${mode}`,
        visibility: "private",
        files: FILES(),
      });
      address = done.address;
      // Public without the user's confirmation round (another suite covers that): anonymous requests reach the code.
      await apps.context.db.update(appsTable).set({ visibility: "public" }).where(eq(appsTable.address, address));
      apps.host.invalidate(address);
      const added = await fetch(`${origin()}/api/todos`, { method: "POST", body: JSON.stringify({ title: "Milk" }) });
      expect(added.status).toBe(201);
      expect(await (await fetch(`${origin()}/api/todos`)).json()).toEqual(["Milk"]);
      expect((await fetch(`${origin()}/api/boom`)).status).toBe(500);
      expect(await (await fetch(`${origin()}/api/warn`)).text()).toBe("ok");
      // The module's own path is the handler's too: its source is never sent.
      const source = await fetch(`${origin()}/api/index.js`);
      expect([source.status, await source.text()]).toEqual([404, "no route"]);
      expect((await fetch(`${origin()}/`)).status).toBe(200);
    });

    test("tool_logs: the owner reads the lines, oldest first, with time and level", async () => {
      const result = await owner.callTool({ name: "tool_logs", arguments: { address } });
      expect(result.isError).toBeFalsy();
      const data = result.structuredContent as LogsOut;
      const seen = data.lines.map((l) => `${l.level} ${l.message.split("\n")[0]}`);
      expect(seen.slice(0, 2)[0]).toStartWith("info added ");
      expect(seen).toContain("debug listed 1");
      expect(seen).toContain("warn careful");
      expect(seen.some((l) => l.startsWith("error GET /api/boom: uncaught Error: kaboom"))).toBe(true);
      expect(data.truncated).toBe(false);
      expect(Date.parse(data.lines[0]!.time)).toBeGreaterThan(Date.now() - 600_000);
      expect(textOf(result)).toContain(" warn careful");
    });

    test("tool_logs: level keeps that level and more severe ones; limit keeps the newest", async () => {
      const warned = await callOk<LogsOut>(owner, "tool_logs", { address, level: "warn" });
      expect(warned.lines.map((l) => l.level)).toEqual(["error", "warn"]);
      const last = await callOk<LogsOut>(owner, "tool_logs", { address, limit: 1 });
      expect(last.lines).toHaveLength(1);
      expect(last.lines[0]!.message).toBe("careful");
      expect(last.truncated).toBe(true);
    });

    test("tool_logs: a manager who is not the owner is refused by name; a stranger learns nothing", async () => {
      const asManager = await refused(manager, "tool_logs", { address });
      expect(asManager).toContain(`Only the owner of ${address} may read its logs`);
      const asStranger = await refused(stranger, "tool_logs", { address });
      expect(asStranger).toContain(`You have no app at the address "${address}"`);
      expect(await refused(owner, "tool_logs", { address, limit: 101 })).toContain("100");
    });

    test("tool_logs without lines says how to log, or that the app has no server code", async () => {
      const plain = await callOk<{ address: string }>(owner, "publish", {
        name: `Plain ${mode}`,
        visibility: "private",
        files: [FILES()[0]!],
      });
      const result = await owner.callTool({ name: "tool_logs", arguments: { address: plain.address } });
      expect(textOf(result)).toContain("has no server code");
      const quiet = await callOk<{ address: string }>(owner, "publish", {
        name: `Quiet ${mode}`,
        visibility: "private",
        files: FILES(),
      });
      const none = await owner.callTool({ name: "tool_logs", arguments: { address: quiet.address } });
      expect(textOf(none)).toContain("console.log");
      expect(apps.host.flushLogs).toBeFunction();
    });

    describe("cookies server code sets", () => {
      let cookieOrigin = "";
      beforeAll(async () => {
        const done = await callOk<{ address: string }>(owner, "publish", {
          name: `Cookies ${mode}`,
          visibility: "private",
          files: FILES(COOKIE_SERVER),
        });
        await apps.context.db
          .update(appsTable)
          .set({ visibility: "public" })
          .where(eq(appsTable.address, done.address));
        apps.host.invalidate(done.address);
        cookieOrigin = hatch.appHostUrl.replace("//", `//${done.address}.`);
      });

      test("no Hatch cookie leaves in any spelling a browser reads as one; the app's own cookies do", async () => {
        const response = await fetch(`${cookieOrigin}/api/set`);
        expect(await response.text()).toBe("cookies");
        expect(response.headers.getSetCookie()).toEqual(APP_COOKIES);
      });

      test("server code reads none of Hatch's cookies the browser sends, only the app's", async () => {
        const cookie = "theme=dark; hatch_viewer=v; HATCH_SESSION=s; __Host-hatch_viewer=h; hatchling=yes";
        const echoed = await fetch(`${cookieOrigin}/api/echo`, { headers: { cookie } });
        expect(await echoed.text()).toBe("theme=dark; hatchling=yes");
      });

      describe.skipIf(!hasChromium)("in headless Chromium", () => {
        let browser: Browser;
        beforeAll(async () => {
          browser = await launchChromium();
        }, 60_000);
        afterAll(async () => {
          await browser?.close();
        });

        test("the browser keeps only the app's cookies", async () => {
          const context = await browser.newContext();
          const page = await context.newPage();
          await page.goto(`${cookieOrigin}/api/set`);
          expect(await page.locator("body").innerText()).toBe("cookies");
          const kept = await context.cookies(`${cookieOrigin}/api/set`);
          expect(kept.map((c) => `${c.name}=${c.value}`).sort()).toEqual(["cart=3", "hatchling=yes", "theme=dark"]);
          await context.close();
        });
      });
    });

    test("while the machine is busy, each of 50 freshly published versions answers its first request", async () => {
      const files = (n: number) =>
        FILES(VERSIONED(n)).map((file) =>
          file.path === "service.json" ? { ...file, content: JSON.stringify({ server: "api/index.js" }) } : file,
        );
      const made = await callOk<{ address: string }>(owner, "publish", {
        name: `Busy ${mode}`,
        visibility: "private",
        files: files(0),
      });
      await apps.context.db.update(appsTable).set({ visibility: "public" }).where(eq(appsTable.address, made.address));
      const busy = burnCores(3);
      const answers: string[] = [];
      try {
        for (let n = 1; n <= 50; n++) {
          await callOk(owner, "publish", { address: made.address, files: files(n) });
          // The published version is the one served next (in cluster mode the change may still be on its way).
          apps.host.invalidate(made.address);
          const answer = await fetch(`${hatch.appHostUrl.replace("//", `//${made.address}.`)}/api/version`);
          answers.push(`${answer.status} ${await answer.text()}`);
        }
      } finally {
        busy.stop();
      }
      expect(answers).toEqual(Array.from({ length: 50 }, (_, i) => `200 {"version":${i + 1},"rows":20000}`));
      const lines = await callOk<LogsOut>(owner, "tool_logs", { address: made.address });
      expect(lines.lines).toEqual([]);
    }, 180_000);
  });
}
