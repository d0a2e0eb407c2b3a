import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type HatchEvent } from "@hatch/contracts";
import { AI_LIMITS } from "../services/apps/src/spec/server-code.ts";
import type { AppsService } from "@hatch/apps";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { and, eq } from "drizzle-orm";
import { outbox } from "../services/apps/src/db/schema.ts";
import { activity } from "../services/orgs/src/db/schema.ts";
import { seedApp } from "../services/apps/test/support/seed.ts";
import { accountOf, addAiKey } from "./support/ai.ts";
import { eventually } from "./support/eventually.ts";
import { startFakeAiProvider, type FakeAiProvider } from "./support/fake-ai-provider.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { freePort, EMBEDDED_MODES } from "./support/servers.ts";

// hatch.ai.chat through the app host against a local OpenAI-compatible fake: the app's chosen key reaches the provider
// and nothing else, token counts become an apps.ai.used event (billing's, not the activity log's), the provider's
// failures become errors a developer can act on, and neither answers, errors nor logs ever carry the key.

const KEY = "sk-fake-chat-tool-key-0001";
const DOWN_KEY = "sk-down-provider-key-0002";
const LIMIT_KEY = "sk-fake-limit-app-key-0003";
const ASK = {
  model: "fake-small",
  messages: [
    { role: "system", content: "Be brief." },
    { role: "user", content: "hello there" },
  ],
};

for (const mode of EMBEDDED_MODES) {
  describe(`AI chat through the app host (${mode})`, () => {
    let hatch: TestHatch;
    let apps: AppsService;
    let fake: FakeAiProvider;
    let owner: Awaited<ReturnType<typeof userWithToken>>;
    let client: Client;
    let account = "";
    const logs: string[] = [];
    const seen: string[] = [];
    const chatApp = `chat-${mode}`;
    const limitApp = `chat-limit-${mode}`;
    const offApp = `chat-off-${mode}`;
    const nokeyApp = `chat-nokey-${mode}`;
    const origin = (address: string) => hatch.appHostUrl.replace("//", `//${address}.`);

    async function chat(address: string, body: unknown, init: RequestInit = {}) {
      const response = await fetch(`${origin(address)}/_hatch/ai/chat`, {
        method: "POST",
        headers: { "Content-Type": "application/json", ...(init.headers as Record<string, string>) },
        body: typeof body === "string" ? body : JSON.stringify(body),
        ...(init.method ? { method: init.method, body: null } : {}),
      });
      const text = await response.text();
      seen.push(text);
      return {
        status: response.status,
        headers: response.headers,
        text,
        json: (text ? JSON.parse(text) : null) as {
          content?: string;
          error?: { code: string; message: string };
        } & Record<string, unknown>,
      };
    }

    beforeAll(async () => {
      fake = startFakeAiProvider();
      fake.keys.add(KEY);
      fake.keys.add(LIMIT_KEY);
      hatch = await startTestHatch(mode, {
        serviceEnv: { AI_PROVIDERS: `fake=${fake.baseUrl},down=http://127.0.0.1:${freePort()}/v1` },
        logWrite: (line) => logs.push(line),
      });
      apps = hatch.services.get("apps") as AppsService;
      owner = await userWithToken(hatch, { name: "Chatty" });
      client = await connectClient(hatch, owner.accessToken);
      account = await accountOf(hatch, owner);
      for (const address of [chatApp, limitApp, offApp, nokeyApp]) {
        await seedApp(apps.context, {
          address,
          owner: { id: owner.id, email: owner.email },
          accountId: account,
          visibility: "public",
          files: { "index.html": "<h1>Chat</h1>" },
        });
      }
      await addAiKey(hatch, owner, { scope: "tool", address: chatApp, provider: "fake", key: KEY });
      await addAiKey(hatch, owner, { scope: "tool", address: chatApp, provider: "down", key: DOWN_KEY });
      await addAiKey(hatch, owner, { scope: "tool", address: limitApp, provider: "fake", key: LIMIT_KEY });
      for (const address of [chatApp, limitApp])
        await callOk(client, "tool_ai", { address, value: "tool", acceptCost: true });
      await callOk(client, "tool_ai", { address: nokeyApp, value: "mine", acceptCost: true });
    }, 90_000);
    afterAll(async () => {
      await client?.close();
      await hatch?.stop();
      await fake?.stop();
    });

    test("a chat call reaches the provider with the app's key and answers content, model and usage", async () => {
      const reply = await chat(chatApp, { ...ASK, temperature: 0.5, maxTokens: 20 });
      expect(reply.status).toBe(200);
      expect(reply.json).toEqual({
        content: "echo: hello there",
        model: "fake-small-2026-01-01",
        usage: { inputTokens: 4, outputTokens: 3 },
      });
      const sent = fake.requests.at(-1)!;
      expect(sent.authorization).toBe(`Bearer ${KEY}`);
      expect(sent.body).toEqual({
        model: "fake-small",
        messages: ASK.messages,
        temperature: 0.5,
        max_tokens: 20,
        stream: false,
      });
    });

    test("each call's tokens become an apps.ai.used event, which the activity log leaves out", async () => {
      const used = await eventually(async () => {
        const rows = await apps.context.db
          .select({ event: outbox.event })
          .from(outbox)
          .where(eq(outbox.subject, "events.apps.ai.used"));
        return rows.length > 0 ? (rows[0]!.event as HatchEvent) : undefined;
      }, "the usage event");
      expect(used).toMatchObject({ service: "apps", entity: "ai", verb: "used", app: chatApp, account, actor: null });
      expect(used.details).toMatchObject({
        provider: "fake",
        model: "fake-small-2026-01-01",
        inputTokens: 4,
        outputTokens: 3,
        choice: "tool",
        source: "browser",
      });
      expect((used.details.payer as { scope: string }).scope).toBe("tool");
      // A later change of the same account reaches the log; the usage event before it never does.
      await addAiKey(hatch, owner, { scope: "tool", address: offApp, provider: "fake", key: "sk-off-app-key-0004" });
      const orgs = hatch.databases.get("orgs")!;
      await eventually(
        async () =>
          (
            await orgs
              .select()
              .from(activity)
              .where(and(eq(activity.accountId, account), eq(activity.action, "app.ai_key_added")))
          ).length > 0,
        "the key's activity line",
      );
      expect(await orgs.select().from(activity).where(eq(activity.action, "ai.used"))).toEqual([]);
    });

    test("bad requests are refused before the provider is asked", async () => {
      const before = fake.requests.length;
      const noModel = await chat(chatApp, { messages: ASK.messages });
      expect([noModel.status, noModel.json.error?.code]).toEqual([400, "invalid"]);
      expect(noModel.json.error?.message).toContain("model");
      expect((await chat(chatApp, { model: "fake-small", messages: [] })).json.error?.message).toContain(
        "messages needs at least one message",
      );
      expect((await chat(chatApp, "{not json")).status).toBe(400);
      const big = await chat(chatApp, {
        ...ASK,
        messages: [{ role: "user", content: "x".repeat(AI_LIMITS.maxRequestBytes + 10) }],
      });
      expect([big.status, big.json.error?.code]).toEqual([413, "too_large"]);
      const get = await chat(chatApp, null, { method: "GET" });
      expect(get.status).toBe(405);
      const foreign = await chat(chatApp, ASK, {
        headers: { Origin: origin(limitApp), "Sec-Fetch-Site": "same-site" },
      });
      expect([foreign.status, foreign.json.error?.code]).toEqual([403, "forbidden"]);
      expect(fake.requests.length).toBe(before);
    });

    test("provider failures become errors a developer can act on, without the key or the provider's words", async () => {
      fake.keys.delete(KEY);
      const refusedKey = await chat(chatApp, ASK);
      fake.keys.add(KEY);
      expect([refusedKey.status, refusedKey.json.error?.code]).toEqual([403, "forbidden"]);
      expect(refusedKey.json.error?.message).toBe(
        "The AI provider fake refused this app's key (HTTP 401 (invalid_api_key)). Its owner adds a new fake key with ai_key.",
      );

      fake.failNext(429);
      const limited = await chat(chatApp, ASK);
      expect([limited.status, limited.json.error?.code, limited.headers.get("retry-after")]).toEqual([
        429,
        "limit_exceeded",
        "7",
      ]);
      expect(limited.json.error?.message).toContain("rate limit or quota");

      fake.failNext(500);
      const failed = await chat(chatApp, ASK);
      expect([failed.status, failed.json.error?.code]).toEqual([503, "unavailable"]);

      const model = await chat(chatApp, { ...ASK, model: "gpt-nonexistent" });
      expect([model.status, model.json.error?.code]).toEqual([400, "invalid"]);
      expect(model.json.error?.message).toContain('does not know the model "gpt-nonexistent"');

      const down = await chat(chatApp, { ...ASK, provider: "down" });
      expect([down.status, down.json.error?.code]).toEqual([503, "unavailable"]);
      expect(down.json.error?.message).toContain("could not be reached");

      const noSuch = await chat(chatApp, { ...ASK, provider: "other" });
      expect([noSuch.status, noSuch.json.error?.code]).toEqual([403, "forbidden"]);
      expect(noSuch.json.error?.message).toContain("Keys exist for: fake, down");
      for (const text of [refusedKey, limited, failed, model].map((r) => r.text)) {
        expect(text).not.toContain("Incorrect API key");
        expect(text).not.toContain("sk-");
      }
    });

    test("no AI without a choice or without the chosen key", async () => {
      const off = await chat(offApp, ASK);
      expect([off.status, off.json.error?.message]).toEqual([
        403,
        "AI calls are off for this app; its owner picks a key with tool_ai.",
      ]);
      const nokey = await chat(nokeyApp, ASK);
      expect([nokey.status, nokey.json.error?.code]).toEqual([403, "forbidden"]);
      expect(nokey.json.error?.message).toContain("ai_key");
    });

    test("tool_ai's change reaches the app host at once", async () => {
      await callOk(client, "tool_ai", { address: chatApp, value: "none" });
      expect((await chat(chatApp, ASK)).status).toBe(403);
      await callOk(client, "tool_ai", { address: chatApp, value: "tool", acceptCost: true });
      expect((await chat(chatApp, ASK)).status).toBe(200);
    });

    test(`at most ${AI_LIMITS.callsPerViewerPerMinute} AI calls per viewer per app per minute`, async () => {
      for (let i = 0; i < AI_LIMITS.callsPerViewerPerMinute; i++) expect((await chat(limitApp, ASK)).status).toBe(200);
      const over = await chat(limitApp, ASK);
      expect([over.status, over.json.error?.code]).toEqual([429, "limit_exceeded"]);
      expect(over.json.error?.message).toContain("Too many AI calls");
      expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
      // Another app's allowance is its own.
      expect((await chat(chatApp, ASK)).status).toBe(200);
    });

    test("no answer, error or log line carried a key", () => {
      expect(seen.length).toBeGreaterThan(40);
      for (const key of [KEY, DOWN_KEY, LIMIT_KEY]) {
        expect(seen.filter((text) => text.includes(key))).toEqual([]);
        expect(logs.filter((line) => line.includes(key))).toEqual([]);
      }
    });
  });
}
