import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { Client, isInputRequiredResult, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";
import { startStandInApps, type StandInApps } from "./support/stand-in-apps.ts";

type User = Awaited<ReturnType<typeof userWithToken>>;

/** One HTTP exchange the v2 client made, as sent and as answered. */
interface Exchange {
  headers: Record<string, string>;
  body: Record<string, unknown>;
  status: number;
  answer: string;
}

/**
 * The SDK v2 client pinned to 2026-07-28 (no initialize: server/discover, then `_meta` on every request), with its
 * HTTP exchanges recorded so a test can look at the wire.
 */
async function connect2026(
  hatch: TestHatch,
  token: string,
  options: { elicitation?: boolean; autoFulfill?: boolean } = {},
): Promise<{ client: Client; exchanges: Exchange[] }> {
  const exchanges: Exchange[] = [];
  const record: typeof fetch = Object.assign(
    async (input: string | URL | Request, init?: RequestInit) => {
      const response = await fetch(input, init);
      const body = typeof init?.body === "string" ? JSON.parse(init.body) : {};
      const type = response.headers.get("content-type") ?? "";
      if (!type.includes("json")) return response;
      const answer = await response.text();
      exchanges.push({
        headers: Object.fromEntries(new Headers(init?.headers).entries()),
        body,
        status: response.status,
        answer,
      });
      return new Response(answer, { status: response.status, headers: response.headers });
    },
    { preconnect: fetch.preconnect },
  );
  const client = new Client(
    { name: "claude-code", version: "3.0.0" },
    {
      versionNegotiation: { mode: { pin: "2026-07-28" } },
      capabilities: options.elicitation ? { elicitation: { form: {} } } : {},
      ...(options.autoFulfill === false ? { inputRequired: { autoFulfill: false } } : {}),
    },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(hatch.mcpUrl), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
      fetch: record,
    }),
  );
  return { client, exchanges };
}

// The gateway speaks MCP 2026-07-28 natively (SDK v2's createMcpHandler): discovery instead of initialize, the
// client's version and capabilities on each request, list results a client may cache, the Mcp-Method header checked,
// and a question to the user as an input_required answer that any gateway copy can finish.
for (const mode of EMBEDDED_MODES) {
  describe(`MCP 2026-07-28 with the SDK v2 client (${mode})`, () => {
    let hatch: TestHatch;
    let apps: StandInApps;
    let owner: User;
    let other: User;

    beforeAll(async () => {
      hatch = await startTestHatch(mode, { services: ["orgs"] });
      apps = await startStandInApps(hatch);
      owner = await userWithToken(hatch, { name: "Modern Owner" });
      other = await userWithToken(hatch);
    }, 60_000);
    afterAll(async () => {
      await apps?.stop();
      await hatch?.stop();
    });
    beforeEach(() => apps.reset());

    test("connects by server/discover without a session; whoami answers", async () => {
      const { client, exchanges } = await connect2026(hatch, owner.accessToken);
      expect(client.getServerVersion()?.name).toBe("hatch");
      const discover = exchanges.find((e) => e.body.method === "server/discover");
      expect(discover?.status).toBe(200);
      expect(JSON.parse(discover!.answer).result.supportedVersions).toContain("2026-07-28");
      expect(exchanges.some((e) => e.body.method === "initialize")).toBe(false);

      const result = await client.callTool({ name: "whoami", arguments: {} });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ kind: "personal", name: "Modern Owner" });
      await client.close();
    });

    test("tools/list: the same tools in the same order as a 2025 client gets, with ttlMs and a private cacheScope", async () => {
      const { client, exchanges } = await connect2026(hatch, owner.accessToken);
      const { tools } = await client.listTools();
      const legacy = await connectClient(hatch, owner.accessToken);
      const legacyTools = (await legacy.listTools()).tools;
      await legacy.close();
      expect(tools.map((t) => t.name)).toEqual(legacyTools.map((t) => t.name));
      expect(tools.length).toBeGreaterThan(20);

      const listed = exchanges.find((e) => e.body.method === "tools/list")!;
      expect(listed.headers["mcp-method"]).toBe("tools/list");
      const wire = JSON.parse(listed.answer).result;
      expect(wire.ttlMs).toBe(600_000);
      expect(wire.cacheScope).toBe("private");

      // Asked again (bypassing the client's cache), the order is the same.
      const again = await client.listTools(undefined, { cacheMode: "bypass" });
      expect(again.tools.map((t) => t.name)).toEqual(tools.map((t) => t.name));
      await client.close();
    });

    test("an Mcp-Method header that does not match the body is refused with -32020", async () => {
      const { client, exchanges } = await connect2026(hatch, owner.accessToken);
      await client.listTools();
      await client.close();
      const listed = exchanges.find((e) => e.body.method === "tools/list")!;
      const response = await fetch(hatch.mcpUrl, {
        method: "POST",
        headers: { ...listed.headers, "mcp-method": "tools/call" },
        body: JSON.stringify(listed.body),
      });
      const answer = (await response.json()) as { error?: { code: number } };
      expect(answer.error?.code).toBe(-32020);
      // The same request with its own header is answered.
      const fine = await fetch(hatch.mcpUrl, {
        method: "POST",
        headers: listed.headers,
        body: JSON.stringify(listed.body),
      });
      expect(((await fine.json()) as { result?: { tools?: unknown[] } }).result?.tools?.length).toBeGreaterThan(20);
    });

    test("a question is an input_required round trip: the client shows the form and the service acts once", async () => {
      const { client } = await connect2026(hatch, owner.accessToken, { elicitation: true });
      const asked: string[] = [];
      client.setRequestHandler("elicitation/create", async (request) => {
        asked.push(request.params.message);
        return { action: "accept", content: { confirm: true } };
      });
      const result = await client.callTool({ name: "delete_tool", arguments: { address: "my-app" } });
      await client.close();
      expect(asked).toEqual(["Delete my-app? This cannot be undone."]);
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual({ status: "deleted", address: "my-app" });
      expect(apps.calls.map((c) => [c.answer, c.confirmed])).toEqual([
        [undefined, false],
        [{ confirm: true }, true],
      ]);
    });

    test("declined in the form: nothing changes, and the service is not called again", async () => {
      const { client } = await connect2026(hatch, owner.accessToken, { elicitation: true });
      client.setRequestHandler("elicitation/create", async () => ({ action: "decline" }));
      const result = await client.callTool({ name: "delete_tool", arguments: { address: "my-app" } });
      await client.close();
      expect(result.structuredContent).toEqual({ status: "declined" });
      expect(apps.calls).toHaveLength(1);
      expect(apps.acted).toEqual([]);
    });

    test("the sealed requestState works only for the same user, tool and arguments; tampered state is refused", async () => {
      const { client } = await connect2026(hatch, owner.accessToken, { elicitation: true, autoFulfill: false });
      const first = await client.request(
        { method: "tools/call", params: { name: "delete_tool", arguments: { address: "my-app" } } },
        { allowInputRequired: true },
      );
      expect(isInputRequiredResult(first)).toBe(true);
      const state = (first as { requestState?: string }).requestState!;
      expect(state).toBeTruthy();
      // Sealed: the confirm token and the question are not readable in it.
      expect(Buffer.from(state.slice(3), "base64url").toString("latin1")).not.toContain("my-app");
      const accept = { answer: { action: "accept", content: { confirm: true } } };

      const refusedFor = async (c: Client, params: Record<string, unknown>) => {
        try {
          const r = await c.request({ method: "tools/call", params: params as never }, { allowInputRequired: true });
          return `answered: ${textOf(r as object)}`;
        } catch (error) {
          return String((error as Error).message);
        }
      };
      // Other arguments, another tool, a flipped byte, another user: refused, and the service never acts.
      expect(
        await refusedFor(client, {
          name: "delete_tool",
          arguments: { address: "other-app" },
          inputResponses: accept,
          requestState: state,
        }),
      ).toContain("does not belong");
      // The second-to-last character (the last may hold only padding bits), changed to one it is not: the test had
      // picked the new character by the last one, so one time in 64 the "flipped" state was the state itself.
      const at = state.length - 2;
      const flipped = `${state.slice(0, at)}${state[at] === "A" ? "B" : "A"}${state.slice(at + 1)}`;
      expect(flipped).not.toBe(state);
      expect(
        await refusedFor(client, {
          name: "delete_tool",
          arguments: { address: "my-app" },
          inputResponses: accept,
          requestState: flipped,
        }),
      ).toContain("does not belong");
      const { client: stranger } = await connect2026(hatch, other.accessToken, {
        elicitation: true,
        autoFulfill: false,
      });
      expect(
        await refusedFor(stranger, {
          name: "delete_tool",
          arguments: { address: "my-app" },
          inputResponses: accept,
          requestState: state,
        }),
      ).toContain("does not belong");
      await stranger.close();
      expect(apps.acted).toEqual([]);

      // The owner's own retry with the answer acts.
      const done = await client.request(
        {
          method: "tools/call",
          params: {
            name: "delete_tool",
            arguments: { address: "my-app" },
            inputResponses: accept,
            requestState: state,
          } as never,
        },
        { allowInputRequired: true },
      );
      expect((done as { structuredContent?: unknown }).structuredContent).toEqual({
        status: "deleted",
        address: "my-app",
      });
      await client.close();
    });

    test("a client without forms gets the confirm link, as a 2025 client does", async () => {
      const { client } = await connect2026(hatch, owner.accessToken);
      const result = await client.callTool({ name: "delete_tool", arguments: { address: "my-app" } });
      await client.close();
      const action = (result.structuredContent as { userAction?: { kind?: string; url?: string } }).userAction;
      expect(action?.kind).toBe("open_link");
      expect(action?.url).toContain("/confirm/");
      expect(apps.acted).toEqual([]);
    });
  });
}
