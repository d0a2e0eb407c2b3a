import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppsService } from "@hatch/apps";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { Browser } from "../gateway/test/oauth-harness.ts";
import { hiddenFields } from "../gateway/test/support.ts";
import { secrets } from "../services/apps/src/db/schema.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectFormClient, textOf, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

// Issue 23, item 1: a secret goes only where its owner saw it would go. The owner types it on a page that names each
// API's destination (origin, base path, header or query parameter); a publish that points the API elsewhere leaves
// that API without the secret (the destination receives nothing, the app gets a clear refusal, tool_secret names the
// API, the old and the new destination and the page) until the owner confirms the new destination on the page.
// And what the API echoes back is scrubbed of the secret's encoded forms too, in answers and in the app's logs.

const PASSWORD = "correct horse battery";
// Characters JSON escapes (", \), one it may (/), non-ASCII, and + for the URL and base64 forms.
const VALUE = `wk/Ünï"code\\+key-${crypto.randomUUID().slice(0, 8)}`;

type SecretOut = {
  status: string;
  url: string | null;
  isSet: boolean;
  referencedBy: string[];
  unconfirmed?: { api: string; url: string; in: string; was: { url: string; in: string } | null }[];
  userAction?: { url: string | null; message: string };
};
interface Seen {
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
}

/** A destination that records every request; /echo answers the key it was given in the forms APIs echo it in. */
function startDestination() {
  const requests: Seen[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request) {
      const url = new URL(request.url);
      const seen = {
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: Object.fromEntries(request.headers),
      };
      requests.push(seen);
      const key = seen.query.appid ?? seen.headers["x-api-key"] ?? "";
      if (!url.pathname.endsWith("/echo")) return Response.json({ ok: true });
      const bytes = Buffer.from(key, "utf8");
      const ascii = JSON.stringify(key).replace(
        /[\u0080-\uffff]/g,
        (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
      );
      // One JSON answer (the key JSON-escaped), then the same key in other encodings on plain lines.
      const body = [
        JSON.stringify({ received: key }),
        `ascii ${ascii}`,
        `base64 ${bytes.toString("base64")}`,
        `base64url ${bytes.toString("base64url")}`,
        `hex ${bytes.toString("hex")}`,
        `basic Basic ${Buffer.from(`user:${key}`).toString("base64")}`,
        `url ${encodeURIComponent(key)}`,
      ].join("\n");
      return new Response(body, { headers: { "content-type": "text/plain; charset=utf-8" } });
    },
  });
  return { origin: `http://127.0.0.1:${server.port}`, requests, stop: () => server.stop(true) };
}

/** The forms the redaction must catch, each as it would appear in an answer or a log line. */
function formsOfValue(value: string): Record<string, string> {
  const bytes = Buffer.from(value, "utf8");
  return {
    raw: value,
    json: JSON.stringify(value).slice(1, -1),
    ascii: JSON.stringify(value)
      .slice(1, -1)
      .replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`),
    base64: bytes.toString("base64"),
    base64url: bytes.toString("base64url"),
    hex: bytes.toString("hex"),
    basic: Buffer.from(`user:${value}`).toString("base64"),
    url: encodeURIComponent(value),
  };
}

const SERVER = `export default {
  async fetch(request, env) {
    const path = new URL(request.url).pathname;
    try {
      const answer = await env.api("weather", path === "/api/echo" ? "/echo" : "/current");
      const text = await answer.text();
      console.log("weather answered " + text);
      return new Response(text, { status: answer.status });
    } catch (error) {
      console.error("weather refused: " + error.message);
      return Response.json({ refused: error.message }, { status: 503 });
    }
  },
};`;

for (const mode of MODES) {
  describe(`a secret goes only where its owner confirmed (${mode})`, () => {
    let hatch: TestHatch;
    let apps: AppsService;
    let ai: Client;
    let owner: Awaited<ReturnType<typeof userWithToken>>;
    let first: ReturnType<typeof startDestination>;
    let second: ReturnType<typeof startDestination>;
    let address = "";
    let appUrl = "";

    beforeAll(async () => {
      first = startDestination();
      second = startDestination();
      hatch = await startTestHatch(mode);
      apps = hatch.services.get("apps") as AppsService;
      owner = await userWithToken(hatch, { name: "Olive", verified: true });
      ({ client: ai } = await connectFormClient(hatch, owner.accessToken, () => ({
        action: "accept",
        content: { confirm: true },
      })));
    }, 90_000);
    afterAll(async () => {
      await ai?.close();
      await hatch?.stop();
      await first?.stop();
      await second?.stop();
    });

    /** Publishes the app with its weather API at `url`, the secret placed by `place`. */
    async function publish(url: string, place: Record<string, string>): Promise<string> {
      const serviceJson = { server: "api/index.js", apis: { weather: { url, secret: "WEATHER_KEY", in: place } } };
      const files = [
        { path: "index.html", content: "<h1>Weather</h1>", encoding: "utf8" },
        { path: "api/index.js", content: SERVER, encoding: "utf8" },
        { path: "service.json", content: JSON.stringify(serviceJson), encoding: "utf8" },
      ];
      const result = await ai.callTool({
        name: "publish",
        arguments: address ? { address, files } : { name: `Weather ${mode}`, visibility: "public", files },
      });
      expect(result.isError).toBeFalsy();
      ({ address, url: appUrl } = result.structuredContent as { address: string; url: string });
      return textOf(result);
    }

    async function signedIn(): Promise<Browser> {
      const browser = new Browser((path, init) => fetch(`${hatch.baseUrl}${path}`, { ...init, redirect: "manual" }));
      expect((await browser.signIn(owner.email, PASSWORD)).status).toBe(303);
      return browser;
    }
    const pagePath = () => `/dashboard/apps/${address}/secrets/WEATHER_KEY`;
    /** The page's call (hatch.api) and the server code's (env.api). */
    const fromPage = () => fetch(`${appUrl}_hatch/api/weather/current`);
    const fromServer = () => fetch(`${appUrl}api/current`);
    const sealedNow = async () => (await apps.context.db.select().from(secrets))[0]?.sealed;

    test("the page names where the value goes; saved there, it is sent there", async () => {
      await publish(`${first.origin}/v1`, { query: "appid" });
      const link = await callOk<SecretOut>(ai, "tool_secret", { address, name: "WEATHER_KEY" });
      expect(link.url).toBe(`${hatch.baseUrl}${pagePath()}`);

      const browser = await signedIn();
      const form = await (await browser.get(pagePath())).text();
      expect((await browser.post(pagePath(), { ...hiddenFields(form), value: VALUE })).status).toBe(303);
      expect((await fromPage()).status).toBe(200);
      expect((await fromServer()).status).toBe(200);
      expect(first.requests.map((r) => r.query.appid)).toEqual([VALUE, VALUE]);
      expect(form).toContain(`<code>${first.origin}/v1</code>, in the query parameter appid`);
    });

    test("a publish that moves the API to another host: nothing is sent, the app is told, tool_secret says where and links", async () => {
      const published = await publish(`${second.origin}/v1`, { query: "appid" });
      expect(published).toEndWith(
        "This version sends a secret to a new destination, so nothing is sent until the owner confirms it on the secret's page (tool_secret with the name gives it): WEATHER_KEY (api weather).",
      );
      const page = await fromPage();
      const server = await fromServer();
      expect(second.requests).toEqual([]);
      expect(first.requests).toHaveLength(2);
      expect(page.status).toBe(503);
      expect(page.headers.get("x-hatch-error")).toBe("unavailable");
      const refusal = ((await page.json()) as { error: { message: string } }).error.message;
      expect(refusal).toBe(
        `The API weather now goes to ${second.origin}/v1, in the query parameter appid, which the app's owner has not confirmed for the secret WEATHER_KEY, so nothing was sent. The owner confirms the new destination on the secret's page (tool_secret, name WEATHER_KEY).`,
      );
      expect(server.status).toBe(503);
      expect(((await server.json()) as { refused: string }).refused).toBe(refusal);

      const result = await ai.callTool({ name: "tool_secret", arguments: { address, name: "WEATHER_KEY" } });
      const data = result.structuredContent as SecretOut;
      const url = `${hatch.baseUrl}${pagePath()}`;
      expect(data.unconfirmed).toEqual([
        {
          api: "weather",
          url: `${second.origin}/v1`,
          in: "the query parameter appid",
          was: { url: `${first.origin}/v1`, in: "the query parameter appid" },
        },
      ]);
      expect(data.userAction?.url).toBe(url);
      expect(textOf(result).split("\n")[0]).toBe(
        `WEATHER_KEY is not sent to api weather of ${address}: api weather now goes to ${second.origin}/v1, in the query parameter appid (it was ${first.origin}/v1, in the query parameter appid). Its calls fail until the owner confirms the new destination. Give the user this link to confirm it in their browser: ${url}`,
      );

      const html = await (await (await signedIn()).get(pagePath())).text();
      expect(html).toContain(`now goes to <code>${second.origin}/v1</code>`);
      expect(html).toContain(
        `It went to <code>${first.origin}/v1</code>, in the query parameter appid when the value was last saved or confirmed.`,
      );
      expect(html).toContain("Confirm new destination");
    });

    test("a page opened before another publish confirms nothing; confirmed on the page as it is now, the value is sent", async () => {
      const browser = await signedIn();
      const stale = await (await browser.get(pagePath())).text();
      // Same host, but the value moves from the query into a header: a new destination too.
      await publish(`${second.origin}/v1`, { header: "X-Api-Key" });
      const before = await sealedNow();
      const refused = await browser.post(pagePath(), { ...hiddenFields(stale), confirm: "yes" });
      expect(refused.status).toBe(409);
      const shown = await refused.text();
      expect(shown).toContain("APIs changed since this page was opened. Nothing was saved");
      expect(shown).toContain("in the header X-Api-Key");
      expect((await browser.post(pagePath(), { ...hiddenFields(stale), value: "another-value-1" })).status).toBe(409);
      expect(await sealedNow()).toBe(before);
      expect((await fromPage()).status).toBe(503);
      expect(second.requests).toEqual([]);

      const current = await (await browser.get(pagePath())).text();
      const confirmed = await browser.post(pagePath(), { ...hiddenFields(current), confirm: "yes" });
      expect(confirmed.status).toBe(303);
      expect(await (await browser.get(pagePath())).text()).toContain("Confirmed.");
      expect(await sealedNow()).toBe(before);
      expect((await fromPage()).status).toBe(200);
      expect(second.requests.map((r) => r.headers["x-api-key"])).toEqual([VALUE]);
      const link = await callOk<SecretOut>(ai, "tool_secret", { address, name: "WEATHER_KEY" });
      expect(link.unconfirmed).toBeUndefined();
    });

    test("a placement change alone needs confirming again; a rollback to the first host too", async () => {
      await publish(`${second.origin}/v1`, { query: "appid" });
      expect((await fromServer()).status).toBe(503);
      const link = await callOk<SecretOut>(ai, "tool_secret", { address, name: "WEATHER_KEY" });
      expect(link.unconfirmed?.[0]?.was).toEqual({ url: `${second.origin}/v1`, in: "the header X-Api-Key" });
      const rolledBack = await ai.callTool({ name: "rollback", arguments: { address, version: 1 } });
      expect(textOf(rolledBack)).toContain("nothing is sent until the owner confirms it");
      expect((await fromServer()).status).toBe(503);
      expect(second.requests).toHaveLength(1);
      expect(first.requests).toHaveLength(2);
    });

    test("what the API echoes is scrubbed in every common encoding, in answers and in tool_logs", async () => {
      // Back to the destination confirmed before: sent again without asking.
      expect(await publish(`${second.origin}/v1`, { header: "X-Api-Key" })).not.toContain("WEATHER_KEY");

      const fromServerCode = await (await fetch(`${appUrl}api/echo`)).text();
      const fromPageCall = await (await fetch(`${appUrl}_hatch/api/weather/echo`)).text();
      const logs = await callOk<{ lines: { message: string }[] }>(ai, "tool_logs", { address });
      const logged = logs.lines.map((line) => line.message).join("\n");
      expect(logged).toContain("weather answered");
      for (const answer of [fromServerCode, fromPageCall, logged]) {
        expect(answer).toContain("base64 [secret]");
        for (const [name, form] of Object.entries(formsOfValue(VALUE)))
          expect([name, answer.includes(form)]).toEqual([name, false]);
      }
      // The destination did get the value: the forms above are what it echoed.
      expect(second.requests.at(-1)?.headers["x-api-key"]).toBe(VALUE);
    });

    test("the page refuses a value shorter than 8 characters and keeps the one set", async () => {
      const browser = await signedIn();
      const form = await (await browser.get(pagePath())).text();
      expect(form).toContain('minlength="8"');
      const before = await sealedNow();
      const short = await browser.post(pagePath(), { ...hiddenFields(form), value: " 1234567 " });
      expect(short.status).toBe(400);
      expect(await short.text()).toContain("The value is shorter than 8 characters.");
      expect(await sealedNow()).toBe(before);
    });
  });
}
