import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client, isInputRequiredResult, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { textOf, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

type User = Awaited<ReturnType<typeof userWithToken>>;
type Offered = { mode?: string; url?: string; message?: string };

/** The SDK v2 client pinned to 2026-07-28, with the elicitation modes it declares; `offered` records each request. */
async function connect2026(
  hatch: TestHatch,
  token: string,
  elicitation: Record<string, Record<string, never>> | undefined,
  reply: (params: Offered) => { action: "accept" | "decline" | "cancel" } = () => ({ action: "accept" }),
  autoFulfill = true,
): Promise<{ client: Client; offered: Offered[] }> {
  const offered: Offered[] = [];
  const client = new Client(
    { name: "claude-code", version: "3.0.0" },
    {
      versionNegotiation: { mode: { pin: "2026-07-28" } },
      capabilities: elicitation ? { elicitation } : {},
      ...(autoFulfill ? {} : { inputRequired: { autoFulfill: false } }),
    },
  );
  if (elicitation)
    client.setRequestHandler("elicitation/create", async (request) => {
      offered.push(request.params as Offered);
      return reply(request.params as Offered);
    });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(hatch.mcpUrl), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  return { client, offered };
}

// Secret, key and card pages for a 2026-07-28 client that declared URL-mode elicitation: the page is an input_required
// URL request (its state sealed: the tool's result waits in it), not only a link in the text; the client's choice comes
// back with the state and the result says what the user chose. Clients without URL mode keep the link in the text.
for (const mode of MODES) {
  describe(`URL-mode input for 2026-07-28 clients (${mode})`, () => {
    let hatch: TestHatch;
    let user: User;
    let other: User;

    beforeAll(async () => {
      hatch = await startTestHatch(mode, { services: ["orgs", "apps"] });
      user = await userWithToken(hatch, { name: "Url Mode" });
      other = await userWithToken(hatch, { name: "Someone Else" });
    }, 60_000);
    afterAll(async () => {
      await hatch?.stop();
    });

    const pageOf = () => `${hatch.baseUrl}/dashboard/ai-keys`;

    test("the key page is an input_required URL request; the result says what the user chose", async () => {
      for (const [action, said] of [
        ["accept", "The user chose to open the page in their browser; wait for them to say they are done."],
        ["decline", "The user declined to open the page; give them the link if they ask for it."],
        ["cancel", "The user dismissed the offer to open the page; give them the link."],
      ] as const) {
        const { client, offered } = await connect2026(hatch, user.accessToken, { url: {} }, () => ({ action }));
        const result = await client.callTool({ name: "ai_key", arguments: { scope: "mine" } });
        await client.close();
        expect(offered).toHaveLength(1);
        expect(offered[0]!.mode).toBe("url");
        expect(offered[0]!.url).toStartWith(pageOf());
        expect(offered[0]!.message).toContain("Open this page to add your own");
        expect(result.isError).toBeFalsy();
        expect(textOf(result).split("\n").at(-1)).toBe(said);
        expect((result.structuredContent as { status: string; url: string }).url).toBe(offered[0]!.url!);
      }
    });

    test("on the wire: input_required with one URL request and a sealed state bound to the user", async () => {
      const { client } = await connect2026(hatch, user.accessToken, { url: {} }, undefined, false);
      const call = (c: Client, params: Record<string, unknown>) =>
        c.request({ method: "tools/call", params: params as never }, { allowInputRequired: true });
      const first = await call(client, { name: "ai_key", arguments: { scope: "mine" } });
      expect(isInputRequiredResult(first)).toBe(true);
      const asked = first as unknown as {
        inputRequests: Record<string, { method: string; params: Offered }>;
        requestState: string;
      };
      const requests = Object.values(asked.inputRequests);
      expect(requests).toHaveLength(1);
      expect(requests[0]!.method).toBe("elicitation/create");
      expect(requests[0]!.params.mode).toBe("url");
      expect(requests[0]!.params.url).toStartWith(pageOf());
      // The state is sealed: the result's text and link are not readable in it.
      expect(Buffer.from(asked.requestState.slice(3), "base64url").toString("latin1")).not.toContain("ai-keys");
      const key = Object.keys(asked.inputRequests)[0]!;
      const second = await call(client, {
        name: "ai_key",
        arguments: { scope: "mine" },
        inputResponses: { [key]: { action: "accept" } },
        requestState: asked.requestState,
      });
      expect(isInputRequiredResult(second)).toBe(false);
      expect(textOf(second)).toContain("The user chose to open the page in their browser");
      await client.close();

      // Another user's call with this state is refused, and gets nothing of the result.
      const { client: theirs } = await connect2026(hatch, other.accessToken, { url: {} }, undefined, false);
      const stolen = await call(theirs, {
        name: "ai_key",
        arguments: { scope: "mine" },
        inputResponses: { [key]: { action: "accept" } },
        requestState: asked.requestState,
      }).then(
        (r) => JSON.stringify(r),
        (e: Error) => e.message,
      );
      await theirs.close();
      expect(stolen).toContain("does not belong to this ai_key call");
      expect(stolen).not.toContain("ai-keys");
    });

    test("clients that did not declare URL mode get the link in the text, no URL request", async () => {
      for (const elicitation of [undefined, { form: {} }]) {
        const { client, offered } = await connect2026(hatch, user.accessToken, elicitation);
        const result = await client.callTool({ name: "ai_key", arguments: { scope: "mine" } });
        await client.close();
        expect(offered).toEqual([]);
        expect(textOf(result)).toContain(pageOf());
        expect(textOf(result)).not.toContain("The user");
      }
    });
  });
}
