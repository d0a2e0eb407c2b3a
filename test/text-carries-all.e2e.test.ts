import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

// Several clients pass only a tool's text to the model, never its structured content. So every URL and every id in
// the structured content must be in the text too (issue 15, point 4).

/** Ids a model passes back to a tool (an app's address, an invitation to accept). */
const ID_KEYS = new Set(["address", "invitationId"]);

/**
 * URLs, the ids a later call needs, emails and days (a time as its day), anywhere in a structured result: what a
 * client that shows only the text would otherwise miss (issue 26, item 13).
 */
function mustBeSaid(value: unknown, key = "", out: string[] = []): string[] {
  if (typeof value === "string") {
    if (/^https?:\/\//.test(value) || (ID_KEYS.has(key) && value.length > 0) || /^[^\s@]+@[^\s@]+$/.test(value))
      out.push(value);
    else if (/^\d{4}-\d{2}-\d{2}/.test(value)) out.push(value.slice(0, 10));
  } else if (Array.isArray(value)) for (const item of value) mustBeSaid(item, key, out);
  else if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) mustBeSaid(v, k, out);
  return out;
}

for (const mode of EMBEDDED_MODES) {
  describe(`every tool's text carries its ids and URLs (${mode})`, () => {
    let hatch: TestHatch;
    let client: Client;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      const user = await userWithToken(hatch, { verified: true });
      client = await connectClient(hatch, user.accessToken);
    }, 60_000);
    afterAll(async () => {
      await client?.close();
      await hatch?.stop();
    });

    test("a tour of the tools", async () => {
      const files = [{ path: "index.html", content: "<!doctype html><title>t</title>", encoding: "utf8" }];
      const calls: [string, Record<string, unknown>][] = [
        ["whoami", {}],
        ["publish", { name: "Tour App", visibility: "private", files }],
        ["publish", { address: "tour-app", files }],
        ["list_tools", {}],
        ["share", { address: "tour-app", visibility: "people", add: ["friend@example.com"] }],
        ["rollback", { address: "tour-app" }],
        ["rollback", { address: "tour-app", version: 1 }],
        ["tool_stats", { address: "tour-app" }],
        ["tool_data", { address: "tour-app" }],
        ["tool_logs", { address: "tour-app" }],
        ["tool_secret", { address: "tour-app", name: "WEATHER_KEY" }],
        ["ai_key", { scope: "mine", action: "link", provider: "openai" }],
        ["tool_ai", { address: "tour-app", value: "none" }],
        ["billing", { manage: true }],
        ["org_setup", { action: "create", name: "Tour Org" }],
        ["org", {}],
        ["org_invite", { emails: ["new@example.com"] }],
        ["org_members", {}],
        ["org_apps", {}],
        ["org_activity", {}],
        ["find_domain", { query: "tourapp" }],
        ["domain_status", {}],
        ["delete_tool", { address: "tour-app" }],
      ];
      const missing: string[] = [];
      for (const [name, args] of calls) {
        const result = await client.callTool({ name, arguments: args });
        const text = textOf(result);
        if (result.isError) {
          missing.push(`${name} failed: ${text.slice(0, 200)}`);
          continue;
        }
        for (const said of new Set(mustBeSaid(result.structuredContent)))
          if (!text.includes(said)) missing.push(`${name}: ${said}`);
      }
      expect(missing).toEqual([]);
    }, 60_000);
  });
}
