import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppsService } from "@hatch/apps";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { eq } from "drizzle-orm";
import { appsTable, documents } from "../services/apps/src/db/schema.ts";
import { addAiKey } from "./support/ai.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

// Issue 26's figures, walked as a model would with the ChatGPT profile (which reads structuredContent as well as the
// text): the tool list's size, and for a few typical tasks the bytes of text and structuredContent per call. Where both
// reach the model, structuredContent is never larger than the text: every fact is in the text, none only in the data.

type User = Awaited<ReturnType<typeof userWithToken>>;
const CHATGPT = { name: "openai-mcp", version: "1.0.0" };
/** The most the tool list may weigh (JSON of tools/list), the size a client's context budget allows. */
const TOOL_LIST_MAX = 32 * 1024;
const bytes = (value: unknown) => Buffer.byteLength(typeof value === "string" ? value : JSON.stringify(value));
const files = [
  { path: "index.html", content: "<!doctype html><title>Notes</title><h1>Notes</h1>", encoding: "utf8" },
  {
    path: "service.json",
    content: JSON.stringify({ collections: { notes: { read: "anyone", create: "signed_in" } } }),
  },
];

interface Measured {
  task: string;
  tool: string;
  text: number;
  structured: number;
}

for (const mode of MODES) {
  describe(`the walk's figures (${mode})`, () => {
    let hatch: TestHatch;
    let ann: User;
    let bob: User;
    let annC: Client;
    /** Ann through a client that is offered every tool (ChatGPT is not offered find_domain and buy_domain). */
    let annAll: Client;
    const measured: Measured[] = [];

    /** Calls a tool as the task's step, keeps its sizes, and returns its structured result. */
    async function step(task: string, tool: string, args: Record<string, unknown> = {}, client = annC) {
      const result = await client.callTool({ name: tool, arguments: args });
      const text = textOf(result);
      if (result.isError) throw new Error(`${task}: ${tool} failed: ${text}`);
      measured.push({
        task,
        tool,
        text: bytes(text),
        structured: result.structuredContent ? bytes(result.structuredContent) : 0,
      });
      return result.structuredContent as Record<string, unknown>;
    }

    beforeAll(async () => {
      hatch = await startTestHatch(mode, { serviceEnv: { AI_PROVIDERS: "fake=http://127.0.0.1:9/v1" } });
      ann = await userWithToken(hatch, { name: "Ann Walker" });
      bob = await userWithToken(hatch, { name: "Bob Helper" });
      annC = await connectClient(hatch, ann.accessToken, CHATGPT);
      annAll = await connectClient(hatch, ann.accessToken);
    }, 60_000);
    afterAll(async () => {
      await annC?.close();
      await annAll?.close();
      await hatch?.stop();
      const lines = measured.map(
        (m) =>
          `${m.task.padEnd(22)} ${m.tool.padEnd(18)} text ${String(m.text).padStart(5)} B  structured ${String(m.structured).padStart(5)} B`,
      );
      process.stderr.write(`\nissue 26 figures (${mode}):\n${lines.join("\n")}\n`);
    });

    test("the tool list stays under 32 KB", async () => {
      for (const [profile, client] of [
        ["every tool", annAll],
        ["ChatGPT", annC],
      ] as const) {
        const list = await client.listTools();
        const size = bytes(list.tools);
        process.stderr.write(`tool list (${mode}, ${profile}): ${list.tools.length} tools, ${size} bytes\n`);
        expect(size).toBeLessThan(TOOL_LIST_MAX);
      }
    });

    // Each contract's `structured` form (shared/contracts/src/tools) keeps an MCP client's structuredContent to the ids,
    // states and numbers its text also gives, so ChatGPT, which reads both, does not pay for the facts twice over.
    test("typical tasks: structuredContent is never larger than the text", async () => {
      // Publish an app with a collection, see it, read its data.
      await step("publish an app", "publish", { name: "Walk Notes", visibility: "private", files });
      const apps = hatch.services.get("apps") as AppsService;
      const [app] = await apps.context.db.select().from(appsTable).where(eq(appsTable.address, "walk-notes"));
      await apps.context.db.insert(documents).values(
        [1, 2, 3, 4, 5, 6].map((i) => ({
          appId: app!.id,
          collection: "notes",
          id: `note${i}`,
          data: { text: `Note ${i}`, done: i % 2 === 0 },
          bytes: 30,
          createdBy: ann.id,
          createdByEmail: ann.email,
          createdAt: new Date(Date.UTC(2026, 0, 1, 12, 0, i)),
          updatedAt: new Date(Date.UTC(2026, 0, 1, 12, 0, i)),
        })),
      );
      await step("publish an app", "publish", { address: "walk-notes", files });
      await step("see my apps", "list_tools");
      await step("see my apps", "tool_stats", { address: "walk-notes" });
      await step("read an app's data", "tool_data", { address: "walk-notes" });
      await step("read an app's data", "tool_logs", { address: "walk-notes" });
      await step("roll back", "rollback", { address: "walk-notes" });
      await step("share", "share", { address: "walk-notes", visibility: "people", add: [bob.email] });
      // An AI key: the keys there are, and the app's choice.
      await addAiKey(hatch, ann, { scope: "mine", provider: "fake", key: "sk-walk-0123456789abcdef" });
      await step("use AI in an app", "ai_key", { scope: "mine" });
      // A domain.
      await step("find a domain", "find_domain", { query: "walknotes" }, annAll);
      await step("find a domain", "domain_status");
      // An organization: create it, invite, see its members, apps and activity.
      await step("run an organization", "org_setup", { action: "create", name: "Walk Co" });
      await step("run an organization", "org_invite", { emails: [bob.email, "carol@example.com"] });
      await step("run an organization", "publish", { name: "Walk Board", visibility: "org", files });
      await step("run an organization", "org");
      await step("run an organization", "org_members");
      await step("run an organization", "org_apps");
      await step("run an organization", "org_activity");
      await step("account", "whoami");
      await step("account", "billing");

      const larger = measured.filter((m) => m.structured > m.text).map((m) => `${m.tool}: ${m.structured} > ${m.text}`);
      expect(larger).toEqual([]);
    }, 120_000);
  });
}
