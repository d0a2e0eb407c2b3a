import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppsService } from "@hatch/apps";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { eq } from "drizzle-orm";
import { appsTable } from "../services/apps/src/db/schema.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

// A request that server code could not answer because of Hatch (here: the module is missing from Hatch's file store)
// says so in the answer and in the owner's log (tool_logs): Hatch's failure, nothing in the app's code caused it, and
// a retry is safe. The app's own failures keep saying what the app did.

const SERVER = `
export default {
  fetch(request) {
    if (new URL(request.url).pathname === "/api/boom") throw new Error("kaboom");
    return new Response("hello");
  },
};`;

for (const mode of MODES) {
  describe(`server code: Hatch's own failures say so (${mode})`, () => {
    let hatch: TestHatch;
    let apps: AppsService;
    let owner: Client;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      apps = hatch.services.get("apps") as AppsService;
      owner = await connectClient(hatch, (await userWithToken(hatch)).accessToken);
    }, 90_000);
    afterAll(async () => {
      await owner?.close();
      await hatch?.stop();
    });

    async function publishPublic(name: string, source: string): Promise<string> {
      const { address } = await callOk<{ address: string }>(owner, "publish", {
        name,
        visibility: "private",
        files: [
          { path: "index.html", content: "<h1>hi</h1>", encoding: "utf8" },
          { path: "api/index.js", content: source, encoding: "utf8" },
          { path: "service.json", content: JSON.stringify({ server: "api/index.js" }), encoding: "utf8" },
        ],
      });
      // Public without the confirmation round (another suite covers it): anonymous requests reach the code.
      await apps.context.db.update(appsTable).set({ visibility: "public" }).where(eq(appsTable.address, address));
      apps.host.invalidate(address);
      return address;
    }

    async function logLines(address: string): Promise<string> {
      await apps.host.flushLogs();
      return textOf(await owner.callTool({ name: "tool_logs", arguments: { address } }));
    }

    test("the module cannot be read: 503 with Retry-After, Hatch's failure, a retry is safe; the log says the same", async () => {
      const address = await publishPublic(`Lost ${mode}`, SERVER);
      await apps.context.blobs.delete(new Bun.CryptoHasher("sha256").update(SERVER).digest("hex"));
      const answer = await fetch(`${hatch.appHostUrl.replace("//", `//${address}.`)}/api/hello`);
      expect(answer.status).toBe(503);
      expect(answer.headers.get("retry-after")).toBe("1");
      const reason = "Hatch could not read the server module from its file store";
      expect(await answer.json()).toEqual({
        error: {
          code: "unavailable",
          message: `Hatch failed while running this app's server code (${reason}); nothing in the app's code caused it. Nothing it did took effect, so a retry is safe.`,
        },
      });
      expect(await logLines(address)).toContain(
        `warn GET /api/hello: not answered (503): ${reason}. This was Hatch's failure; nothing in the app's code caused it. Nothing it did took effect, so a retry is safe.`,
      );
    });

    test("the app's own throw still says what the app did, not Hatch", async () => {
      const address = await publishPublic(`Throws ${mode}`, `${SERVER}\n// its own module`);
      const answer = await fetch(`${hatch.appHostUrl.replace("//", `//${address}.`)}/api/boom`);
      expect(answer.status).toBe(500);
      const said = JSON.stringify(await answer.json());
      expect(said).toContain("This app's server code failed.");
      expect(said).not.toContain("Hatch failed");
      const lines = await logLines(address);
      expect(lines).toContain("GET /api/boom: uncaught Error: kaboom");
      expect(lines).not.toContain("Hatch's failure");
    });
  });
}
