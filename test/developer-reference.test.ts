import { afterEach, describe, expect, test } from "bun:test";
import { createLogger, createMemoryBus, startService, type Bus, type RunningService } from "@hatch/platform";
import { DeveloperReferenceSchema, rpcMethods, ToolError } from "@hatch/contracts";
import { callPublicRpc } from "../gateway/src/services.ts";
import {
  appsReference,
  DeveloperReferenceCache,
  docsResponse,
  REFERENCE_TTL_MS,
  type ReferenceSource,
} from "../gateway/src/pages/docs.ts";
import { appsRootOrigin, loadAppsConfig } from "../services/apps/src/config.ts";
import { developerReference } from "../services/apps/src/reference/reference.ts";
import { developerReferenceRpc } from "../services/apps/src/rpc/developer-reference.ts";

// The developer reference is the apps service's text (its limits, its apps domain); the gateway serves it at /mcp/docs
// from apps' `reference` rpc, kept a few minutes per topic, and answers 503 while apps cannot give it.

const logger = createLogger({ level: "error" });
/** The text apps gives for a deployment whose apps are served under `appsOrigin`. */
const fromApps =
  (appsOrigin: string | null): ReferenceSource =>
  async (topic) =>
    developerReference(topic, { appsOrigin });

describe("the developer reference page", () => {
  const get = (path: string, appsOrigin: string | null) =>
    docsResponse(
      new Request(`http://localhost${path}`, { headers: { accept: "text/html" } }),
      false,
      fromApps(appsOrigin),
    );

  test("names app addresses under the configured apps origin, with a contents list of its sections", async () => {
    const page = await (await get("/mcp/docs", "https://apps.example.net")).text();
    expect(page).toContain("https://my-todo.apps.example.net");
    expect(page).not.toContain("localhost:3001");
    const ids = new Set([...page.matchAll(/<h2 id="([^"]+)"/g)].map((m) => m[1]));
    const links = [...page.matchAll(/<li><a href="#([^"]+)">/g)].map((m) => m[1]);
    expect(links.length).toBeGreaterThan(5);
    for (const link of links) expect(ids.has(link)).toBe(true);
    expect(page.match(/<h1[ >]/g)).toHaveLength(1);
  });

  test("without a configured apps origin it says <apps domain>; Markdown too", async () => {
    expect(await (await get("/mcp/docs", null)).text()).toContain("https://my-todo.&lt;apps domain&gt;");
    const markdown = await (
      await docsResponse(new Request("http://localhost/mcp/docs.md"), true, fromApps("http://localhost:3401"))
    ).text();
    expect(markdown).toContain("`http://my-todo.localhost:3401`");
  });

  test("one topic has a heading of its own", async () => {
    const page = await (await get("/mcp/docs?topic=plans", null)).text();
    expect(page).toContain("<h1>Developer reference</h1>");
  });
});

describe("the apps origin the reference names", () => {
  test("APPS_DOMAIN and APPS_PROTOCOL as the apps service reads them; none: the app host's own origin", () => {
    expect(appsRootOrigin(loadAppsConfig({ APPS_DOMAIN: "apps.example.net" }))).toBe("https://apps.example.net");
    expect(appsRootOrigin(loadAppsConfig({ APPS_DOMAIN: "apps.localhost:8080", APPS_PROTOCOL: "http" }))).toBe(
      "http://apps.localhost:8080",
    );
    expect(appsRootOrigin(loadAppsConfig({ APP_PORT: "3401" }))).toBe("http://localhost:3401");
    expect(() => loadAppsConfig({ APPS_DOMAIN: "https://apps.example.net" })).toThrow("APPS_DOMAIN");
  });
});

describe("/mcp/docs from the apps service", () => {
  let bus: Bus;
  let apps: RunningService | null = null;

  async function startApps(env: Record<string, string>): Promise<void> {
    apps = await startService({
      name: "apps",
      version: "test",
      bus,
      contextKey: Buffer.alloc(32, 1),
      contracts: [],
      tools: [],
      rpc: { [rpcMethods.apps.developerReference]: developerReferenceRpc({ config: loadAppsConfig(env) }) },
      logger,
    });
  }

  afterEach(async () => {
    await apps?.stop();
    apps = null;
    await bus?.drain();
  });

  test("the rpc gives the text service_docs gives, under apps' own apps domain, without a signed context", async () => {
    bus = createMemoryBus({ logger });
    await startApps({ APPS_DOMAIN: "apps.example.net" });
    const answer = await callPublicRpc(
      { bus },
      "apps",
      rpcMethods.apps.developerReference,
      { topic: "all" },
      DeveloperReferenceSchema,
    );
    expect(answer.markdown).toBe(developerReference("all", { appsOrigin: "https://apps.example.net" }));
    const page = await docsResponse(new Request("http://localhost/mcp/docs.md"), true, (topic) =>
      appsReference(bus).get(topic),
    );
    expect([page.status, await page.text()]).toEqual([200, answer.markdown]);
  });

  test("while apps does not answer: a 503 page that says so (HTML and Markdown); the text kept is served", async () => {
    bus = createMemoryBus({ logger });
    const reference = appsReference(bus);
    const serve = (path: string, accept = "text/html") =>
      docsResponse(new Request(`http://localhost${path}`, { headers: { accept } }), false, (topic) =>
        reference.get(topic),
      );

    const down = await serve("/mcp/docs");
    expect(down.status).toBe(503);
    expect(down.headers.get("content-type")).toContain("text/html");
    expect(down.headers.get("retry-after")).toBe("30");
    const page = await down.text();
    expect(page).toContain("<h1>Developer reference</h1>");
    expect(page).toContain("apps service, which is not answering right now");
    expect(page).not.toMatch(/at \w+ \(|Error:|unavailable\)/);
    const markdown = await serve("/mcp/docs?format=markdown");
    expect([markdown.status, markdown.headers.get("content-type")]).toEqual([503, "text/plain; charset=utf-8"]);
    expect(await markdown.text()).toContain("not answering right now");

    await startApps({ APPS_DOMAIN: "apps.example.net" });
    expect((await serve("/mcp/docs")).status).toBe(200);
    await apps!.stop();
    apps = null;
    // Apps went away: the topic this gateway has is still served; one it never had is a 503.
    const kept = await serve("/mcp/docs");
    expect(kept.status).toBe(200);
    expect(await kept.text()).toContain("https://my-todo.apps.example.net");
    expect((await serve("/mcp/docs?topic=plans")).status).toBe(503);
  });
});

describe("the gateway's copy of the reference", () => {
  function counted(answers: (() => Promise<string>)[]) {
    let now = 1_000_000;
    const asked: string[] = [];
    const cache = new DeveloperReferenceCache(
      async (topic) => {
        asked.push(topic);
        const answer = answers.shift();
        if (!answer) throw new Error("no more answers");
        return answer();
      },
      undefined,
      () => now,
    );
    return { cache, asked, advance: (ms: number) => (now += ms) };
  }

  test("asks apps once per topic, at once for requests together, and again after REFERENCE_TTL_MS", async () => {
    const { cache, asked, advance } = counted([async () => "# one", async () => "# plans", async () => "# two"]);
    expect(await Promise.all([cache.get("all"), cache.get("all"), cache.get("all")])).toEqual([
      "# one",
      "# one",
      "# one",
    ]);
    expect(await cache.get("plans")).toBe("# plans");
    advance(REFERENCE_TTL_MS - 1);
    expect(await cache.get("all")).toBe("# one");
    expect(asked).toEqual(["all", "plans"]);
    advance(1);
    expect(await cache.get("all")).toBe("# two");
    expect(asked).toEqual(["all", "plans", "all"]);
  });

  test("a failed ask keeps the text it had and is not repeated for every request; none kept: the failure", async () => {
    const unavailable = () => Promise.reject(new ToolError("unavailable", "apps is down"));
    const { cache, asked, advance } = counted([async () => "# kept", unavailable, unavailable]);
    expect(await cache.get("all")).toBe("# kept");
    advance(REFERENCE_TTL_MS);
    expect(await cache.get("all")).toBe("# kept");
    expect(await cache.get("all")).toBe("# kept");
    expect(asked).toEqual(["all", "all"]);
    const error = await cache.get("plans").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).code).toBe("unavailable");
  });
});
