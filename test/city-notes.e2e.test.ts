import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { createLogger, eventStreamFor } from "@hatch/platform";
import { type HatchEvent } from "@hatch/contracts";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { readFolder } from "./support/app-folder.ts";
import { hasChromium, launchChromium } from "./support/chromium.ts";
import { startFakeAiProvider, type FakeAiProvider } from "./support/fake-ai-provider.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { connectFormClient, textOf, userWithToken } from "./support/mcp.ts";
import { EMBEDDED_MODES, uniqueName } from "./support/servers.ts";

const PASSWORD = "correct horse battery";
const TEST_TIMEOUT_MS = 60_000;
const FIXTURE = new URL("./fixtures/city-notes", import.meta.url).pathname;
// The values a person types on the dashboard pages. The leak check looks for each, and for a long part of each.
const WEATHER_KEY = `wx-${crypto.randomUUID()}`;
const AI_KEY = `sk-fake-${crypto.randomUUID()}`;

async function shows(locator: Locator, expected: string): Promise<void> {
  let seen = "";
  const deadline = Date.now() + 15_000;
  for (;;) {
    seen = (await locator.innerText()).trim();
    if (seen.includes(expected)) return;
    if (Date.now() > deadline) throw new Error(`expected "${expected}", saw "${seen}"`);
    await Bun.sleep(50);
  }
}

/** A weather API that wants its key as the `key` query parameter, as many do. */
function startWeatherApi() {
  const keysSeen: string[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request) {
      const url = new URL(request.url);
      keysSeen.push(url.searchParams.get("key") ?? "");
      if (url.searchParams.get("key") !== WEATHER_KEY) return Response.json({ error: "invalid key" }, { status: 401 });
      if (url.pathname !== "/v1/current") return new Response("not here", { status: 404 });
      return Response.json({ summary: `Sunny in ${url.searchParams.get("city")}` });
    },
  });
  return { origin: `http://127.0.0.1:${server.port}`, keysSeen, stop: () => server.stop(true) };
}

const isUsage = (event: HatchEvent) => event.service === "apps" && event.entity === "ai" && event.verb === "used";

type User = Awaited<ReturnType<typeof userWithToken>>;
interface LogsOutput {
  lines: { time: string; level: string; message: string }[];
  truncated: boolean;
}

// Issue 9 as people meet it: the AI publishes an app with server code, a declared weather API and AI calls; the owner
// types the API's secret and an AI key on Hatch's pages in a real browser; viewers use the app; the AI reads the server
// logs and chooses whose key pays. Then every answer of the run is searched for the two values: none may carry them.
for (const mode of EMBEDDED_MODES) {
  describe.skipIf(!hasChromium)(`server code, secrets and AI keys in a browser (${mode})`, () => {
    let hatch: TestHatch;
    let browser: Browser;
    let ai: Client;
    let alice: User;
    let weather: ReturnType<typeof startWeatherApi>;
    let provider: FakeAiProvider;
    let url = "";
    let address = "";
    const asked: string[] = [];
    const contexts: BrowserContext[] = [];
    // Everything the run showed anyone: tool results, log lines, browser-visible answers.
    const seen: string[] = [];
    const logLines: string[] = [];

    beforeAll(async () => {
      weather = startWeatherApi();
      provider = startFakeAiProvider();
      provider.keys.add(AI_KEY);
      hatch = await startTestHatch(mode, {
        serviceEnv: { AI_PROVIDERS: `fake=${provider.baseUrl}` },
        logWrite: (line) => logLines.push(line),
      });
      alice = await userWithToken(hatch, { name: "Alice" });
      const connected = await connectFormClient(hatch, alice.accessToken, (message) => {
        asked.push(message);
        return {
          action: "accept",
          content: { name: "City Notes", visibility: "public", confirm: true, acceptCost: true },
        };
      });
      ai = connected.client;
      browser = await launchChromium();
    }, 90_000);
    afterAll(async () => {
      for (const context of contexts) await context.close().catch(() => undefined);
      await ai?.close();
      await browser?.close();
      await hatch?.stop();
      await weather?.stop();
      await provider?.stop();
    });

    async function call(name: string, args: Record<string, unknown>) {
      const result = await ai.callTool({ name, arguments: args });
      seen.push(JSON.stringify(result));
      return result;
    }
    async function callOk<T>(name: string, args: Record<string, unknown>): Promise<T> {
      const result = await call(name, args);
      if (result.isError) throw new Error(`${name} failed: ${textOf(result)}`);
      return result.structuredContent as T;
    }

    /** A fresh browser whose every answer (status, headers, body) joins `seen`. */
    async function newPage(): Promise<Page> {
      const context = await browser.newContext();
      contexts.push(context);
      const page = await context.newPage();
      page.on("response", (response) => {
        seen.push(`${response.status()} ${response.url()} ${JSON.stringify(response.headers())}`);
        response.text().then(
          (body) => seen.push(body),
          () => undefined,
        );
      });
      return page;
    }

    async function signInOnHatch(page: Page): Promise<void> {
      await page.waitForURL((next) => next.pathname === "/signin");
      await page.getByLabel("Email").fill(alice.email);
      await page.getByLabel("Password").fill(PASSWORD);
      await page.getByRole("button", { name: "Sign in" }).click();
    }

    test(
      "the AI publishes City Notes: its server code, a declared weather API and a collection",
      async () => {
        const folder = await readFolder(FIXTURE);
        const serviceJson = {
          server: "api/index.js",
          collections: { notes: { read: "anyone", create: "signed_in" } },
          apis: { weather: { url: `${weather.origin}/v1`, secret: "WEATHER_KEY", in: { query: "key" } } },
        };
        folder.set("service.json", new TextEncoder().encode(JSON.stringify(serviceJson)));
        const files = [...folder].map(([path, bytes]) => ({
          path,
          content: new TextDecoder().decode(bytes),
          encoding: "utf8",
        }));
        ({ address, url } = await callOk<{ address: string; url: string }>("publish", { files }));
        expect(address).toBe("city-notes");
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "before the secret is set env.api refuses, the request fails without a stack, the log says why; the source is not served",
      async () => {
        const answer = await fetch(`${url}api/weather?city=Paris`);
        expect(answer.status).toBe(500);
        const body = await answer.text();
        seen.push(body);
        expect(body).not.toContain("index.js:");
        expect(weather.keysSeen).toEqual([]);
        expect((await fetch(`${url}api/index.js`)).status).toBe(404);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "tool_secret gives a page where the owner types the secret in the browser; the AI never sees it",
      async () => {
        const link = await callOk<{ url: string; isSet: boolean; referencedBy: string[] }>("tool_secret", {
          address,
          name: "WEATHER_KEY",
        });
        expect(link.isSet).toBe(false);
        expect(link.referencedBy).toEqual(["weather"]);
        const page = await newPage();
        await page.goto(link.url);
        await signInOnHatch(page);
        await page.waitForURL((next) => next.pathname === new URL(link.url).pathname);
        await page.getByLabel("Value of WEATHER_KEY").fill(WEATHER_KEY);
        await page.getByRole("button", { name: "Save" }).click();
        await shows(page.locator("[role=status]"), "Saved.");
        expect((await callOk<{ isSet: boolean }>("tool_secret", { address, name: "WEATHER_KEY" })).isSet).toBe(true);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "a viewer's page calls the server code: weather through the declared API (key injected), notes in the collection",
      async () => {
        const page = await newPage();
        await page.goto(url);
        await shows(page.locator("#who"), "nobody");
        await page.locator("#city").fill("Lyon");
        await page.getByRole("button", { name: "Weather" }).click();
        await shows(page.locator("#forecast"), "Lyon: Sunny in Lyon");
        expect(weather.keysSeen.at(-1)).toBe(WEATHER_KEY);

        // Adding needs a signed-in viewer (the server code checks env.viewer).
        await page.locator("#text").fill("Great bakeries");
        await page.getByRole("button", { name: "Add note" }).click();
        await shows(page.locator("#error"), "Sign in to add a note");
        await page.getByRole("button", { name: "Sign in" }).click();
        await signInOnHatch(page);
        await page.waitForURL((next) => next.origin === new URL(url).origin);
        await shows(page.locator("#who"), alice.email);
        await page.locator("#city").fill("Lyon");
        await page.locator("#text").fill("Great bakeries");
        await page.getByRole("button", { name: "Add note" }).click();
        await shows(page.locator("#notes"), "Lyon: Great bakeries");
        expect((await fetch(`${url}api/boom`)).status).toBe(500);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "tool_logs shows the server code's lines with their levels; the level filter keeps the more severe ones",
      async () => {
        const all = await callOk<LogsOutput>("tool_logs", { address });
        const messages = all.lines.map((line) => `${line.level} ${line.message}`);
        expect(
          messages.some((m) => m.startsWith("error") && m.includes("WEATHER_KEY") && m.includes("tool_secret")),
        ).toBe(true);
        expect(messages.some((m) => m === "info weather for Lyon: Sunny in Lyon")).toBe(true);
        expect(messages.some((m) => /^info note \S+ added for Lyon$/.test(m))).toBe(true);
        expect(messages.some((m) => m.startsWith("error") && m.includes("boom: the handler failed on purpose"))).toBe(
          true,
        );
        const errors = await callOk<LogsOutput>("tool_logs", { address, level: "warn" });
        expect(errors.lines.length).toBeGreaterThan(0);
        expect(errors.lines.every((line) => line.level === "warn" || line.level === "error")).toBe(true);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "ai_key gives a page for the owner's own key; tool_ai mine on a public app warns and asks; chat works from page and server",
      async () => {
        const before = await call("tool_ai", { address, value: "mine" });
        const link = await callOk<{ url: string }>("ai_key", { scope: "mine", provider: "fake" });
        const page = await newPage();
        await page.goto(link.url);
        await signInOnHatch(page);
        await page.waitForURL((next) => next.pathname === new URL(link.url).pathname);
        await page.getByLabel("Key").fill(AI_KEY);
        await page.getByRole("button", { name: "Save key" }).click();
        await shows(page.locator("[role=status]"), "Saved.");

        // The choice was made before the key existed (the first call asked, since others will use it); now one exists.
        expect(before.isError).not.toBe(true);
        expect(asked.some((message) => /pay/i.test(message))).toBe(true);
        const chosen = await callOk<{ value: string; keyAvailable: boolean; costWarning: string | null }>("tool_ai", {
          address,
          value: "mine",
        });
        expect(chosen).toMatchObject({ value: "mine", keyAvailable: true });
        expect(chosen.costWarning).not.toBeNull();

        const viewer = await newPage();
        await viewer.goto(url);
        await viewer.getByRole("button", { name: "Ask AI (page)" }).click();
        await shows(viewer.locator("#answer"), "echo: Name one city.");
        await viewer.getByRole("button", { name: "Summarise (server)" }).click();
        await shows(viewer.locator("#summary"), "echo: Lyon: Great bakeries");
        expect(provider.requests.filter((r) => r.authorization === `Bearer ${AI_KEY}`).length).toBe(2);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "no tool result, log line, event or browser-visible answer of the run carries the secret or the key",
      async () => {
        const events: HatchEvent[] = [];
        const consumer = eventStreamFor(hatch.bus).consume({
          name: uniqueName("leak"),
          filter: "events.>",
          logger: createLogger({ level: "warn" }),
          handler: async (event) => void events.push(event),
        });
        // The run wrote these events; wait until the usage events of both AI calls arrived.
        const deadline = Date.now() + 15_000;
        while (events.filter((e) => isUsage(e)).length < 2 && Date.now() < deadline) await Bun.sleep(50);
        await consumer.stop();
        expect(events.filter((e) => isUsage(e)).length).toBe(2);

        const haystack = [...seen, ...logLines, ...events.map((e) => JSON.stringify(e))].join("\n");
        expect(seen.length).toBeGreaterThan(20);
        expect(haystack).toContain("Sunny in Lyon"); // the search does see the answers
        for (const value of [WEATHER_KEY, AI_KEY]) {
          expect(haystack.includes(value)).toBe(false);
          expect(haystack.includes(value.slice(-24))).toBe(false);
          expect(haystack.includes(encodeURIComponent(value))).toBe(false);
        }
      },
      TEST_TIMEOUT_MS,
    );
  });
}
