import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { eventually } from "./support/eventually.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { refused } from "./support/orgs.ts";
import { MODES } from "./support/servers.ts";

// The dates org_activity takes are bounded in its contract: a date the database cannot hold (year 0, or 9999-12-31
// whose day ends past year 9999) is a clear invalid_input with an example, not an internal error; a wide range that
// fits still reads the log.

const DATE_HINT = "Use a date from 2000-01-01 to 2999-12-31, as YYYY-MM-DD (e.g. 2026-03-01)";

for (const mode of MODES) {
  describe(`org_activity dates (${mode})`, () => {
    let hatch: TestHatch;
    let owner: Client;

    beforeAll(async () => {
      hatch = await startTestHatch(mode, { services: ["orgs"] });
      owner = await connectClient(hatch, (await userWithToken(hatch, { name: "Dana Dates" })).accessToken);
      await callOk(owner, "org_setup", { action: "create", name: "Dates Inc" });
    }, 60_000);
    afterAll(async () => {
      await owner?.close();
      await hatch?.stop();
    });

    test("a date out of range or not a day is invalid_input with an example", async () => {
      expect(await refused(owner, "org_activity", { from: "0000-01-01" })).toBe(
        `Invalid arguments for org_activity: from: ${DATE_HINT} (invalid_input)`,
      );
      expect(await refused(owner, "org_activity", { to: "9999-12-31" })).toBe(
        `Invalid arguments for org_activity: to: ${DATE_HINT} (invalid_input)`,
      );
      expect(await refused(owner, "org_activity", { from: "1999-12-31", to: "3000-01-01" })).toBe(
        `Invalid arguments for org_activity: from: ${DATE_HINT}; to: ${DATE_HINT} (invalid_input)`,
      );
      expect(await refused(owner, "org_activity", { from: "2025-02-30" })).toBe(
        `Invalid arguments for org_activity: from: ${DATE_HINT} (invalid_input)`,
      );
    });

    test("the widest range allowed still reads the log", async () => {
      // The log is built from events: on NATS the creation's entry arrives a moment after org_setup answered.
      const actions = await eventually(async () => {
        const log = await callOk<{ entries: { action: string }[] }>(owner, "org_activity", {
          from: "2000-01-01",
          to: "2999-12-31",
        });
        const seen = log.entries.map((e) => e.action);
        return seen.includes("org.created") && seen;
      }, "the organization's creation in its activity log");
      expect(actions).toContain("org.created");
    });
  });
}
