import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import type { TestHatch } from "./hatch.ts";

let users = 0;

/**
 * A user with a script token, created the admin way (`bun run admin user:create`: email verified), for tests
 * that are not about sign-in itself. `verified: false` makes one as sign-up does, before the mailed link is opened.
 */
export async function userWithToken(
  hatch: TestHatch,
  options: { readOnly?: boolean; name?: string; email?: string; verified?: boolean } = {},
) {
  const email = options.email ?? `user${++users}-${process.pid}@example.com`;
  const name = options.name ?? `Test User ${users}`;
  const user = await hatch.gateway.auth.createUser(
    { email, password: "correct horse battery", name },
    { verified: options.verified ?? true },
  );
  const token = await hatch.gateway.auth.issueTokenForScript({ email, readOnly: options.readOnly });
  return { ...user, ...token };
}

/** The SDK's real client over streamable HTTP with a bearer token. */
export async function connectClient(
  hatch: TestHatch,
  accessToken: string,
  clientInfo: { name: string; version: string } = { name: "claude-code", version: "2.0.0" },
  headers: Record<string, string> = {},
): Promise<Client> {
  const client = new Client(clientInfo, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(hatch.mcpUrl), {
    requestInit: { headers: { Authorization: `Bearer ${accessToken}`, ...headers } },
  });
  await client.connect(transport);
  return client;
}

export function textOf(result: object): string {
  const content = ((result as { content?: unknown }).content ?? []) as { type: string; text?: string }[];
  return content.map((c) => c.text ?? "").join("\n");
}

/**
 * A client that declared form elicitation and answers every question with `reply`; `asked` records the
 * messages and `schemas` the forms, in the order the gateway showed them.
 */
export async function connectFormClient(
  hatch: TestHatch,
  accessToken: string,
  reply: (message: string, schema: unknown) => ElicitResult,
): Promise<{ client: Client; asked: string[]; schemas: unknown[] }> {
  const asked: string[] = [];
  const schemas: unknown[] = [];
  const client = new Client({ name: "claude-code", version: "2.0.0" }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    const schema = "requestedSchema" in request.params ? request.params.requestedSchema : undefined;
    asked.push(request.params.message);
    schemas.push(schema);
    return reply(request.params.message, schema);
  });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(hatch.mcpUrl), {
      requestInit: { headers: { Authorization: `Bearer ${accessToken}` } },
    }),
  );
  return { client, asked, schemas };
}

/** Calls a tool and returns its structured result; fails the test with the tool's text when it is an error. */
export async function callOk<T = Record<string, unknown>>(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<T> {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) throw new Error(`${name} failed: ${textOf(result)}`);
  return result.structuredContent as T;
}
