import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bindTool, buildQuestion, createLogger, delete_tool, deriveKey, startService, TOOL_CONTRACTS, ToolError, type RunningService, type ToolOutcome, type ToolOutput } from "@hatch/shared";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { startTestHatch, TEST_SECRET, type TestHatch } from "./support/hatch.ts";
import { connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

// The gateway's half of asking the user, driven through a stand-in apps service on the real bus whose
// delete_tool asks for confirmation the way the apps issue will: `ask` first, the real work on the answer.
for (const mode of MODES) {
  describe(`asking the user through the gateway (${mode})`, () => {
    let hatch: TestHatch;
    let apps: RunningService;
    let token: string;
    const calls: { answer?: Record<string, unknown>; confirmed: boolean }[] = [];
    const confirmKey = deriveKey(TEST_SECRET, "test:confirm");

    beforeAll(async () => {
      hatch = await startTestHatch(mode, { services: ["orgs"] });
      apps = await startService({
        name: "apps",
        version: "test",
        bus: hatch.bus,
        contextKey: deriveKey(TEST_SECRET, "ctx"),
        confirmKey,
        contracts: TOOL_CONTRACTS,
        logger: createLogger({ level: "warn" }),
        tools: [
          bindTool(delete_tool, async ({ ctx, input, answer, confirmation }): Promise<ToolOutcome<ToolOutput<typeof delete_tool>>> => {
            calls.push({ answer, confirmed: confirmation !== undefined });
            const link = input.address === "needs-browser" ? `${hatch.baseUrl}/confirm/abc` : undefined;
            if (!answer) {
              const question = buildQuestion(
                confirmKey,
                { sub: ctx.sub, tool: "delete_tool", input },
                {
                  message: `Delete ${input.address}? This cannot be undone.`,
                  properties: { confirm: { type: "boolean", title: "Delete it" } },
                  required: ["confirm"],
                  fallback: "ask_ai",
                  data: { address: input.address },
                },
              );
              return { ask: { ...question, link } };
            }
            if (!confirmation || answer.confirm !== true) throw new ToolError("invalid_input", "Not confirmed.");
            return { text: `Deleted ${input.address}.`, data: { status: "deleted", address: input.address } };
          }),
        ],
      });
      token = (await userWithToken(hatch)).accessToken;
    }, 60_000);
    afterAll(async () => {
      await apps?.stop();
      await hatch?.stop();
    });

    async function formClient(reply: (message: string) => ElicitResult): Promise<{ client: Client; asked: string[] }> {
      const asked: string[] = [];
      const client = new Client({ name: "claude-code", version: "2" }, { capabilities: { elicitation: {} } });
      client.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(request.params.message);
        return reply(request.params.message);
      });
      await client.connect(new StreamableHTTPClientTransport(new URL(hatch.mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
      return { client, asked };
    }

    test("a client with form elicitation asks the user; on accept the service acts on the answer", async () => {
      calls.length = 0;
      const { client, asked } = await formClient(() => ({ action: "accept", content: { confirm: true } }));
      const result = await client.callTool({ name: "delete_tool", arguments: { address: "my-app" } });
      expect(asked).toEqual(["Delete my-app? This cannot be undone."]);
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual({ status: "deleted", address: "my-app" });
      expect(calls).toEqual([{ answer: undefined, confirmed: false }, { answer: { confirm: true }, confirmed: true }]);
      await client.close();
    });

    test("declining changes nothing: the service is not called again", async () => {
      calls.length = 0;
      const { client } = await formClient(() => ({ action: "decline" }));
      const result = await client.callTool({ name: "delete_tool", arguments: { address: "my-app" } });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain("nothing was changed");
      expect(calls).toHaveLength(1);
      await client.close();
    });

    test("without elicitation the AI is told to ask the user; nothing happens yet", async () => {
      calls.length = 0;
      const client = await connectClient(hatch, token);
      const result = await client.callTool({ name: "delete_tool", arguments: { address: "my-app" } });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ status: "needs_user", address: "my-app", userAction: { kind: "ask_user", fields: ["confirm"] } });
      expect(textOf(result)).toContain("Ask the user");
      expect(textOf(result)).toContain("Nothing has changed yet");
      expect(calls).toHaveLength(1);

      const viaLink = await client.callTool({ name: "delete_tool", arguments: { address: "needs-browser" } });
      expect(viaLink.structuredContent).toMatchObject({ status: "needs_user", userAction: { kind: "open_link", url: `${hatch.baseUrl}/confirm/abc` } });
      expect(textOf(viaLink)).toContain("confirm this in their browser");
      await client.close();
    });
  });
}
