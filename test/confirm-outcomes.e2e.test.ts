import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Browser } from "../gateway/test/oauth-harness.ts";
import { csrfOf } from "../gateway/test/support.ts";
import { startTwoCopies } from "./support/copies.ts";
import type { TestHatch } from "./support/hatch.ts";
import { callOk, textOf, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

type User = Awaited<ReturnType<typeof userWithToken>>;
type Caller = { callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<object> };

const PASSWORD = "correct horse battery";
const NOTE = "On the confirm page";

// What a person answers on a confirm page (done, declined, or failed and why) reaches the AI client that asked on its
// next tool call under the same grant, once, in either protocol era. Two gateway copies share one database and bus:
// the AI talks to copy 0 (which has already seen the grant with nothing to tell), the person answers on copy 1.
for (const mode of MODES) {
  describe(`a confirm page's outcome reaches the AI (${mode})`, () => {
    let hatch: TestHatch;
    let copyUrls: string[];
    let stop: () => Promise<void>;

    beforeAll(async () => {
      const copies = await startTwoCopies(mode, { services: ["orgs", "apps"] });
      hatch = copies.hatch;
      copyUrls = copies.copyUrls;
      stop = copies.stop;
    }, 120_000);
    afterAll(async () => {
      await stop?.();
    });

    /** Each copy serves only Hatch's own host (the proxy's): requests sent to a copy directly name it. */
    const host = () => new URL(hatch.baseUrl).host;

    /** The SDK v1 client (2025-11-25, no elicitation) on copy 0. */
    async function connect2025(user: User): Promise<Client> {
      const client = new Client({ name: "claude-code", version: "2.0.0" }, { capabilities: {} });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(copyUrls[0]!), {
          requestInit: { headers: { Authorization: `Bearer ${user.accessToken}`, Host: host() } },
        }),
      );
      return client;
    }

    /** The SDK v2 client pinned to 2026-07-28 (no elicitation) on copy 0. */
    async function connect2026(user: User): Promise<ClientV2> {
      const client = new ClientV2(
        { name: "claude-code", version: "3.0.0" },
        { versionNegotiation: { mode: { pin: "2026-07-28" } }, capabilities: {} },
      );
      await client.connect(
        new TransportV2(new URL(copyUrls[0]!), {
          requestInit: { headers: { Authorization: `Bearer ${user.accessToken}`, Host: host() } },
        }),
      );
      return client;
    }

    async function publish(client: Caller, name: string): Promise<string> {
      const result = (await client.callTool({
        name: "publish",
        arguments: {
          name,
          visibility: "private",
          files: [{ path: "index.html", content: `<!doctype html><title>${name}</title>`, encoding: "utf8" }],
        },
      })) as { structuredContent?: { address?: string } };
      expect(textOf(result)).not.toContain(NOTE);
      return result.structuredContent!.address!;
    }

    /** delete_tool from a client without forms: the confirm page's path. */
    async function deleteLink(client: Caller, address: string): Promise<string> {
      const result = (await client.callTool({ name: "delete_tool", arguments: { address } })) as {
        structuredContent?: { userAction?: { url?: string } };
      };
      const url = result.structuredContent?.userAction?.url;
      if (!url) throw new Error(`no link in ${textOf(result)}`);
      return new URL(url).pathname;
    }

    /** The person, signed in on copy 1, opens the page and presses a button. */
    async function answer(user: User, path: string, action: "confirm" | "cancel"): Promise<string> {
      const origin = new URL(copyUrls[1]!).origin;
      const browser = new Browser((p, init) =>
        fetch(`${origin}${p}`, { ...init, headers: { ...init?.headers, Host: host() }, redirect: "manual" }),
      );
      expect((await browser.signIn(user.email, PASSWORD)).status).toBe(303);
      const page = await browser.get(path);
      expect(page.status).toBe(200);
      const response = await browser.post(path, { csrf: csrfOf(await page.text()), action });
      expect(response.status).toBe(200);
      return response.text();
    }

    test("2025-11-25: confirmed on the page, the next call (any tool) says it was done, once", async () => {
      const user = await userWithToken(hatch);
      const client = await connect2025(user);
      const address = await publish(client, "Old Notes");
      const path = await deleteLink(client, address);
      // Copy 0 looks the grant up once and remembers it has nothing to tell.
      expect(textOf(await client.callTool({ name: "whoami", arguments: {} }))).not.toContain(NOTE);

      expect(await answer(user, path, "confirm")).toContain(`Deleted ${address}`);

      const next = await client.callTool({ name: "whoami", arguments: {} });
      expect(next.isError).toBeFalsy();
      const said = textOf(next);
      expect(said).toContain(`On the confirm page, the user confirmed delete_tool: Deleted ${address}`);
      expect(said.split(NOTE)).toHaveLength(2);
      // Told once: not again on this grant, on either copy.
      expect(textOf(await client.callTool({ name: "list_tools", arguments: {} }))).not.toContain(NOTE);
      await client.close();
    }, 60_000);

    test("2026-07-28: declined and failed answers, each said once, in the order the person gave them", async () => {
      const user = await userWithToken(hatch);
      const client = await connect2026(user);
      const address = await publish(client, "Draft Page");
      const first = await deleteLink(client, address);
      const second = await deleteLink(client, address);
      const third = await deleteLink(client, address);
      await callOk(client as unknown as Client, "whoami");

      expect(await answer(user, first, "cancel")).toContain("Nothing was changed.");
      const declined = textOf(await client.callTool({ name: "list_tools", arguments: {} }));
      expect(declined).toContain("On the confirm page, the user declined delete_tool: nothing was changed.");

      expect(await answer(user, second, "confirm")).toContain(`Deleted ${address}`);
      // The app is gone, so the third link's confirm fails: the AI hears why.
      const failed = await answer(user, third, "confirm");
      expect(failed).toContain("Not done");
      const next = textOf(await client.callTool({ name: "whoami", arguments: {} }));
      const lines = next.split("\n").filter((line) => line.startsWith(NOTE));
      expect(lines).toHaveLength(2);
      expect(lines[0]).toStartWith(`On the confirm page, the user confirmed delete_tool: Deleted ${address} `);
      expect(lines[1]).toStartWith("On the confirm page, the user confirmed delete_tool, but it was not done: ");
      expect(lines[1]).toContain(address);
      expect(textOf(await client.callTool({ name: "whoami", arguments: {} }))).not.toContain(NOTE);
      await client.close();
    }, 60_000);

    test("another grant of the same person is not told", async () => {
      const user = await userWithToken(hatch);
      const client = await connect2025(user);
      const address = await publish(client, "Side Project");
      const path = await deleteLink(client, address);
      const other = await hatch.gateway.auth.issueTokenForScript({ email: user.email });
      await answer(user, path, "confirm");
      const elsewhere = await connect2025({ ...user, ...other });
      expect(textOf(await elsewhere.callTool({ name: "whoami", arguments: {} }))).not.toContain(NOTE);
      expect(textOf(await client.callTool({ name: "whoami", arguments: {} }))).toContain(NOTE);
      await elsewhere.close();
      await client.close();
    }, 60_000);
  });
}
