import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { deriveKey, type CallContextClaims } from "@hatch/contracts";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  createTaskSessionFromClient,
  resultFromTaskOutcome,
  type RawClientDispatch,
} from "@modelcontextprotocol/ext-tasks/client";
import { eq } from "drizzle-orm";
import { hostnames } from "../services/domains/src/db/schema.ts";
import { addTestCard, gatewaySignedContext } from "./support/call-context.ts";
import { startTwoCopies } from "./support/copies.ts";
import { startTestDns, type TestDnsServer } from "./support/domains-dns.ts";
import { startTestHatch, TEST_SECRET, type TestHatch } from "./support/hatch.ts";
import { userWithToken } from "./support/mcp.ts";
import { ADA_REGISTRANT } from "./support/registrant.ts";
import { MODES } from "./support/servers.ts";

// Long work as MCP tasks and changes as notifications, with the SDK v2 client on 2026-07-28. A client that declares
// the tasks extension (driven by @modelcontextprotocol/ext-tasks) gets a task for custom_domain and buy_domain and
// polls it through the domain's stages to live; a client without it gets today's answer. subscriptions/listen tells a
// client of a finished publish and of a domain gone live, only its own user's (or organization's), on whichever gateway
// copy it listens.

type User = Awaited<ReturnType<typeof userWithToken>>;
const EDGE = "edge.hatch-tasks.test";
const TASKS = "io.modelcontextprotocol/tasks";
const page = (title: string) => `<!doctype html><html><head><title>${title}</title></head><body>${title}</body></html>`;
const OWNER = { agree: true, ...ADA_REGISTRANT };

/** The SDK v2 client pinned to 2026-07-28, with form elicitation that answers with `answer`. */
async function connect2026(
  mcpUrl: string,
  token: string,
  options: { tasks?: boolean; answer?: Record<string, unknown> } = {},
): Promise<Client> {
  const capabilities = {
    elicitation: { form: {} },
    ...(options.tasks ? { extensions: { [TASKS]: {} } } : {}),
  };
  const client = new Client(
    { name: "claude-code", version: "3.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } }, capabilities },
  );
  client.setRequestHandler("elicitation/create", async () => ({
    action: "accept",
    content: (options.answer ?? { confirm: true }) as Record<string, string | boolean>,
  }));
  await client.connect(
    new StreamableHTTPClientTransport(new URL(mcpUrl), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

/** One raw 2026-07-28 exchange, as the ext-tasks session asks for it (the SDK client's codecs do not carry tasks). */
function rawDispatch(
  mcpUrl: string,
  token: string,
  seen: Array<{ method: string; result: unknown }>,
): RawClientDispatch {
  let id = 0;
  return async (request, options) => {
    const message = request as { method: string; params?: { name?: string; taskId?: string } };
    const name = message.params?.taskId ?? message.params?.name;
    const response = await fetch(mcpUrl, {
      method: "POST",
      signal: options?.signal,
      headers: {
        Authorization: `Bearer ${token}`,
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": message.method,
        ...(name ? { "Mcp-Name": name } : {}),
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: `raw-${++id}`, ...message }),
    });
    const body = (await response.json()) as { result?: unknown; error?: { code: number; message: string } };
    seen.push({ method: message.method, result: structuredClone(body.result ?? body.error) });
    return body.error
      ? { kind: "error", error: body.error as never }
      : { kind: "result", result: body.result as never };
  };
}

async function taskSession(mcpUrl: string, token: string, answer?: Record<string, unknown>) {
  const client = await connect2026(mcpUrl, token, { tasks: true, answer });
  const seen: Array<{ method: string; result: unknown }> = [];
  const session = createTaskSessionFromClient(client, {
    endpointId: "hatch-test",
    rawDispatch: rawDispatch(mcpUrl, token, seen),
    v2RequestFraming: {
      protocolVersion: "2026-07-28",
      clientInfo: { name: "claude-code", version: "3.0.0" },
      clientCapabilities: { elicitation: { form: {} }, extensions: { [TASKS]: {} } },
    },
    onInputRequest: async (request) => {
      if (request.kind !== "elicitation") throw new Error(`unexpected ${request.kind}`);
      return { action: "accept", content: (answer ?? { confirm: true }) as Record<string, string | boolean> } as never;
    },
  });
  return { client, session, seen };
}

const textOf = (result: { content?: unknown }) =>
  ((result.content as Array<{ type: string; text?: string }>) ?? []).map((c) => c.text ?? "").join("\n");

for (const mode of MODES) {
  describe(`MCP tasks for domains (${mode})`, () => {
    let hatch: TestHatch;
    let dns: TestDnsServer;
    let ada: User;
    let bob: User;
    const tag = mode === "real" ? "r" : "e";
    const ctxKey = deriveKey(TEST_SECRET, "ctx");

    beforeAll(async () => {
      dns = await startTestDns();
      hatch = await startTestHatch(mode, {
        serviceEnv: {
          DNS_SERVERS: dns.address,
          DOMAINS_RECHECK_MS: "100",
          DOMAINS_JOB_POLL_MS: "50",
          EDGE_CNAME_TARGET: EDGE,
          EDGE_IPV4: "127.0.0.1",
          SIMULATED_REGISTRAR_STEP_MS: "40",
        },
      });
      ada = await userWithToken(hatch, { name: "Ada" });
      bob = await userWithToken(hatch, { name: "Bob" });
      const client = await connect2026(hatch.mcpUrl, ada.accessToken);
      for (const name of ["Task Site", "Plain Site"]) {
        const out = await client.callTool({
          name: "publish",
          arguments: { name, visibility: "private", files: [{ path: "index.html", content: page(name) }] },
        });
        expect(out.isError).toBeFalsy();
      }
      await client.close();
      // A card on file for buy_domain (the local provider's checkout, as its page would do it).
      const base: CallContextClaims = {
        sub: ada.id,
        email: ada.email,
        name: ada.name,
        permissions: [],
        scope: "write",
        client: { kind: "claude", name: "test", elicitation: { form: false, url: false } },
        grant: ada.grantId,
        rid: "test",
      };
      await addTestCard(hatch.bus, await gatewaySignedContext(hatch.gateway, ctxKey, base));
    }, 90_000);
    afterAll(async () => {
      await hatch?.stop();
      await dns?.close();
    });

    test("custom_domain runs as a task followed from dns to live; the task is its user's and grant's only", async () => {
      const hostname = `www.ada-task-${tag}.test`;
      const { client, session, seen } = await taskSession(hatch.mcpUrl, ada.accessToken);
      const execution = await session.callTool("custom_domain", { address: "task-site", hostname });
      expect(execution.kind).toBe("task");
      const created = seen.find((s) => s.method === "tools/call")!.result as Record<string, unknown>;
      expect(created).toMatchObject({ resultType: "task", status: "working", ttlMs: expect.any(Number) });
      expect(created.statusMessage).toContain(`CNAME www → ${EDGE}`);
      const taskId = created.taskId as string;

      // Another user's bearer, and another grant of the same user, cannot read it: "not found", as an unknown id.
      const other = await userWithToken(hatch, { name: "Eve" });
      const second = await hatch.gateway.auth.issueTokenForScript({ email: ada.email });
      for (const token of [other.accessToken, second.accessToken]) {
        const refused: Array<{ method: string; result: unknown }> = [];
        const answer = await rawDispatch(
          hatch.mcpUrl,
          token,
          refused,
        )({
          method: "tasks/get",
          params: {
            taskId,
            _meta: {
              "io.modelcontextprotocol/protocolVersion": "2026-07-28",
              "io.modelcontextprotocol/clientInfo": { name: "x", version: "1" },
              "io.modelcontextprotocol/clientCapabilities": { extensions: { [TASKS]: {} } },
            },
          },
        });
        expect(answer).toMatchObject({
          kind: "error",
          error: { code: -32602, message: expect.stringContaining("not found") },
        });
      }

      // The user adds the records; the domains service's checks move the hostname on, and the task with it.
      const [row] = await hatch.databases
        .get("domains")!
        .select()
        .from(hostnames)
        .where(eq(hostnames.hostname, hostname));
      dns.add(`_hatch-challenge.${hostname}`, "TXT", row!.token);
      dns.add(hostname, "CNAME", EDGE);
      const { outcome } = await execution.settle();
      const result = resultFromTaskOutcome(outcome) as {
        content: unknown;
        structuredContent?: Record<string, unknown>;
      };
      expect(textOf(result)).toContain(`${hostname} is live at https://${hostname}/`);
      expect(result.structuredContent).toMatchObject({ status: "connected", hostname, domain: { stage: "live" } });
      const polls = seen.filter((s) => s.method === "tasks/get").map((s) => (s.result as { status: string }).status);
      expect(polls.at(-1)).toBe("completed");
      await session.close();
      await client.close();
    }, 60_000);

    test("buy_domain: the question first (input_required), then a task from registering to live", async () => {
      const domain = `task-buy-${tag}.com`;
      const { client, session, seen } = await taskSession(hatch.mcpUrl, ada.accessToken, OWNER);
      const execution = await session.callTool("buy_domain", { domain, address: "task-site" });
      expect(execution.kind).toBe("task");
      const calls = seen
        .filter((s) => s.method === "tools/call")
        .map((s) => (s.result as { resultType: string }).resultType);
      expect(calls).toEqual(["input_required", "task"]);
      const { outcome } = await execution.settle();
      const result = resultFromTaskOutcome(outcome) as {
        content: unknown;
        structuredContent?: Record<string, unknown>;
      };
      expect(textOf(result)).toContain(`${domain} is live at https://${domain}/`);
      expect(result.structuredContent).toMatchObject({ status: "bought", domain, stage: "live" });
      await session.close();
      await client.close();
    }, 60_000);

    test("a client without the tasks extension gets today's answer, and tasks/get is refused to it", async () => {
      const client = await connect2026(hatch.mcpUrl, ada.accessToken);
      const hostname = `www.plain-${tag}.test`;
      const result = await client.callTool({ name: "custom_domain", arguments: { address: "plain-site", hostname } });
      expect(result.structuredContent).toMatchObject({ status: "connected", hostname, domain: { stage: "dns" } });
      expect(textOf(result)).toContain("Follow progress with custom_domains");
      await client.close();
      const refused = await rawDispatch(
        hatch.mcpUrl,
        ada.accessToken,
        [],
      )({
        method: "tasks/get",
        params: {
          taskId: "t1.whatever",
          _meta: {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": { name: "x", version: "1" },
            "io.modelcontextprotocol/clientCapabilities": {},
          },
        },
      });
      expect(refused).toMatchObject({ kind: "error", error: { code: -32021 } });
    });

    test("subscriptions/listen: a domain gone live is told to its user, not to another", async () => {
      const hostname = `www.listen-${tag}.test`;
      const adaListens = await connect2026(hatch.mcpUrl, ada.accessToken);
      const bobListens = await connect2026(hatch.mcpUrl, bob.accessToken);
      const heard: Record<string, string[]> = { ada: [], bob: [] };
      for (const [who, client] of [
        ["ada", adaListens],
        ["bob", bobListens],
      ] as const) {
        client.setNotificationHandler("notifications/resources/updated", (n) => {
          heard[who]!.push(n.params.uri);
        });
        const sub = await client.listen({ resourceSubscriptions: [`hatch://domains/${hostname}`] });
        expect(sub.honoredFilter.resourceSubscriptions).toEqual([`hatch://domains/${hostname}`]);
      }
      const client = await connect2026(hatch.mcpUrl, ada.accessToken);
      await client.callTool({ name: "custom_domain", arguments: { address: "plain-site", hostname } });
      const [row] = await hatch.databases
        .get("domains")!
        .select()
        .from(hostnames)
        .where(eq(hostnames.hostname, hostname));
      dns.add(`_hatch-challenge.${hostname}`, "TXT", row!.token);
      dns.add(hostname, "CNAME", EDGE);
      while (heard.ada!.length === 0) await Bun.sleep(50);
      expect(heard.ada).toEqual([`hatch://domains/${hostname}`]);
      // Bob listened for the same name: the change is not his, so nothing came (a publish of his own does).
      const bobsClient = await connect2026(hatch.mcpUrl, bob.accessToken);
      await bobListens.listen({ resourceSubscriptions: ["hatch://apps/bob-page"] });
      await bobsClient.callTool({
        name: "publish",
        arguments: { name: "Bob Page", visibility: "private", files: [{ path: "index.html", content: page("Bob") }] },
      });
      while (heard.bob!.length === 0) await Bun.sleep(50);
      expect(heard.bob).toEqual(["hatch://apps/bob-page"]);
      for (const c of [adaListens, bobListens, client, bobsClient]) await c.close();
    }, 60_000);
  });

  describe(`subscriptions/listen across gateway copies (${mode})`, () => {
    let setup: Awaited<ReturnType<typeof startTwoCopies>>;
    let user: User;
    let stranger: User;

    beforeAll(async () => {
      setup = await startTwoCopies(mode, { services: ["orgs", "apps"] });
      user = await userWithToken(setup.hatch, { name: "Lena Listener" });
      stranger = await userWithToken(setup.hatch, { name: "Stan Stranger" });
    }, 60_000);
    afterAll(async () => {
      await setup?.stop();
    });

    test("a publish through one copy is told on the listen stream held by the other copy, to its user only", async () => {
      const publisher = await connect2026(setup.hatch.mcpUrl, user.accessToken);
      const listener = await connect2026(setup.hatch.mcpUrl, user.accessToken);
      const strangerListens = await connect2026(setup.hatch.mcpUrl, stranger.accessToken);
      const uri = "hatch://apps/lena-board";
      const heard: Array<{ uri: string; meta: unknown }> = [];
      const strangerHeard: string[] = [];
      listener.setNotificationHandler("notifications/resources/updated", (n) => {
        heard.push({ uri: n.params.uri, meta: n.params._meta?.["hatch/change"] });
      });
      strangerListens.setNotificationHandler("notifications/resources/updated", (n) => {
        strangerHeard.push(n.params.uri);
      });
      await strangerListens.listen({ resourceSubscriptions: [uri, "hatch://apps/stan-page"] });
      setup.routed.length = 0;
      await listener.listen({ resourceSubscriptions: [uri] });
      const published = await publisher.callTool({
        name: "publish",
        arguments: {
          name: "Lena Board",
          visibility: "private",
          files: [{ path: "index.html", content: page("Lena") }],
        },
      });
      expect(published.structuredContent).toMatchObject({ status: "published", address: "lena-board", version: 1 });
      const listenedOn = setup.routed.find((r) => r.what === "subscriptions/listen")!.backend;
      const publishedOn = setup.routed.find((r) => r.what === "tools/call")!.backend;
      expect(publishedOn).not.toBe(listenedOn);
      while (heard.length === 0) await Bun.sleep(50);
      expect(heard).toEqual([{ uri, meta: { event: "app.published", app: "lena-board", version: 1 } }]);
      // The stranger listened for the same URI on a stream of their own: nothing of Lena's reaches them. Their own
      // publish, made after hers, does (events reach a copy in order, so hers would have come first).
      const stan = await connect2026(setup.hatch.mcpUrl, stranger.accessToken);
      await stan.callTool({
        name: "publish",
        arguments: { name: "Stan Page", visibility: "private", files: [{ path: "index.html", content: page("Stan") }] },
      });
      while (strangerHeard.length === 0) await Bun.sleep(50);
      expect(strangerHeard).toEqual(["hatch://apps/stan-page"]);
      for (const c of [publisher, listener, strangerListens, stan]) await c.close();
    }, 60_000);
  });
}
