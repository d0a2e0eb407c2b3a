import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { eventually } from "./support/eventually.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectFormClient, textOf, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

/** org_activity's structured content; the text says each entry in words. */
type Activity = { entries: { action: string; app?: string; person?: string }[] };

// Every change the apps tools make reaches the organization's activity log through the apps outbox and the
// EVENTS stream: publish, share, rollback and delete, each once, newest first.
for (const mode of MODES) {
  describe(`apps changes in the activity log (${mode})`, () => {
    let hatch: TestHatch;
    let owner: Client;
    let email: string;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      const user = await userWithToken(hatch, { name: "Logged Owner" });
      email = user.email;
      ({ client: owner } = await connectFormClient(hatch, user.accessToken, () => ({
        action: "accept",
        content: { confirm: true },
      })));
      await callOk(owner, "org_setup", { action: "create", name: "Logged Co" });
    }, 60_000);
    afterAll(async () => {
      await owner?.close();
      await hatch?.stop();
    });

    test("publish, share, rollback and delete each leave one entry", async () => {
      const files = (title: string) => [{ path: "index.html", content: `<h1>${title}</h1>`, encoding: "utf8" }];
      await callOk(owner, "publish", { name: "Audited", visibility: "org", files: files("one") });
      await callOk(owner, "publish", { address: "audited", files: files("two") });
      await callOk(owner, "share", { address: "audited", visibility: "private" });
      await callOk(owner, "rollback", { address: "audited", version: 1 });
      await callOk(owner, "delete_tool", { address: "audited" });

      const expected = ["app.deleted", "app.rolled_back", "app.shared", "app.published", "app.published"];
      const log = await eventually(
        async () => {
          const got = await callOk(owner, "org_activity", { app: "audited" });
          return (got as Activity).entries.length >= expected.length ? (got as Activity) : undefined;
        },
        "five app entries",
        15_000,
      );
      expect(log.entries.map((e) => e.action)).toEqual(expected);
      expect(log.entries.every((e) => e.person === email && e.app === "audited")).toBe(true);
      const lines = textOf(await owner.callTool({ name: "org_activity", arguments: { app: "audited" } }))
        .split("\n")
        .slice(1);
      expect(lines[1]).toContain("to version 1 (was 2)");
      expect(lines[4]).toContain("version 1 (new app)");
    }, 30_000);
  });
}
