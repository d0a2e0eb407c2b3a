import { expect } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { bindTool, createLogger, startService, type RunningService } from "@hatch/platform";
import { deriveKey, list_tools, rollback, TOOL_CONTRACTS } from "@hatch/contracts";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import type postgres from "postgres";
import { TEST_SECRET, type TestHatch } from "./hatch.ts";
import { textOf } from "./mcp.ts";

/**
 * A stand-in apps service on `hatch`'s bus whose tools first query `client`: list_tools (a read; no apps once the
 * query works) and rollback (a change; never gets past the query). How a tool call meets a database that fails.
 */
export function startDatabaseApps(hatch: TestHatch, client: postgres.Sql): Promise<RunningService> {
  const db = drizzle({ client });
  return startService({
    name: "apps",
    version: "test",
    bus: hatch.bus,
    contextKey: deriveKey(TEST_SECRET, "ctx"),
    contracts: TOOL_CONTRACTS,
    logger: createLogger({ level: "silent" }),
    tools: [
      bindTool(list_tools, async () => {
        await db.execute(sql`select 1`);
        return { text: "No apps yet.", data: { apps: [] } };
      }),
      bindTool(rollback, async () => {
        await db.execute(sql`select 1`);
        throw new Error("unreachable");
      }),
    ],
  });
}

/** Both tools of startDatabaseApps answer that the database is not answering and to try again (a change: check first). */
export async function expectDatabaseUnavailable(ai: Client): Promise<void> {
  const read = await ai.callTool({ name: "list_tools", arguments: {} });
  expect(read.isError).toBe(true);
  expect(textOf(read)).toBe(
    "Hatch's database is not answering right now (it may be restarting). Try again in a moment. (unavailable)",
  );
  const change = await ai.callTool({ name: "rollback", arguments: { address: "some-app", version: 1 } });
  expect(textOf(change)).toBe(
    "Hatch's database is not answering right now (it may be restarting), so this may not have taken effect. Check, then try again in a moment. (unavailable)",
  );
}
