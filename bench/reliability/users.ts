// The run's users, made the operator's way (the admin commands user:create and token:issue on the run's database),
// each with an MCP connection; the load's users each in an organization of their own with a public app.
import { createAuth, GATEWAY_MIGRATIONS, loadGatewayConfig } from "@hatch/gateway";
import { createLogger, openServiceDatabase } from "@hatch/platform";
import { runAdminCommand } from "../../scripts/admin-commands.ts";
import { appFiles, type LoadUser } from "./load.ts";
import { connectCaller, type Caller } from "./mcp.ts";

export type NewUser = (
  label: string,
  options?: { confirm?: boolean },
) => Promise<{ email: string; token: string; caller: Caller }>;
export type Must = (caller: Caller, tool: string, args: Record<string, unknown>) => Promise<Record<string, unknown>>;

export interface Users {
  newUser: NewUser;
  must: Must;
  /** Every connection made (for closing at the end). */
  callers: Caller[];
  /** Closes the admin's database connection (the callers stay open). */
  close(): Promise<void>;
}

/**
 * `gatewayEnv`: what the gateways run with (PORT, or BASE_URL behind a proxy), so tokens name the same resource.
 * `databaseUrl`: the gateway's database, directly.
 */
export async function openUsers(options: {
  databaseUrl: string;
  secret: string;
  gatewayEnv: Record<string, string>;
  mcpUrl: string;
  runId: string;
}): Promise<Users> {
  const config = loadGatewayConfig(options.gatewayEnv, options.secret);
  const database = await openServiceDatabase(
    { kind: "postgres", url: options.databaseUrl, maxConnections: 2 },
    { schema: "gateway", migrationsFolder: GATEWAY_MIGRATIONS },
  );
  const logger = createLogger({ level: "warn" });
  const auth = createAuth({ config, db: database.db, logger });
  const callers: Caller[] = [];
  const newUser: NewUser = async (label, connectOptions = {}) => {
    const email = `${label}-${options.runId}@reliability.test`;
    const created = await runAdminCommand(
      auth,
      config.mcpUrl,
      { command: "user:create", email, password: "reliability pass 1", name: `Rel ${label}` },
      logger,
    );
    if (!created.ok) throw new Error(created.message);
    const issued = await runAdminCommand(
      auth,
      config.mcpUrl,
      { command: "token:issue", email, readOnly: false },
      logger,
    );
    if (!issued.ok) throw new Error(issued.message);
    const caller = connectCaller(options.mcpUrl, issued.stdout.trim(), label, connectOptions);
    callers.push(caller);
    return { email, token: issued.stdout.trim(), caller };
  };
  const must: Must = async (caller, tool, args) => {
    const outcome = await caller.call(tool, args);
    if (outcome.kind !== "ok")
      throw new Error(`setup ${tool} failed: ${outcome.kind} ${"text" in outcome ? outcome.text : ""}`);
    return outcome.data;
  };
  return { newUser, must, callers, close: () => database.close() };
}

/** `count` load users, each in an organization of their own with a public app (one version published). */
export async function makeLoadUsers(users: Users, count: number, runId: string): Promise<LoadUser[]> {
  const out: LoadUser[] = [];
  for (let i = 1; i <= count; i++) {
    const { email, caller } = await users.newUser(`user${i}`);
    const org = (await users.must(caller, "org_setup", { action: "create", name: `Rel Org ${runId} ${i}` })) as {
      org: { id: string };
    };
    const appName = `Rel App ${runId} ${i}`;
    const published = await users.must(caller, "publish", {
      name: appName,
      visibility: "public",
      files: appFiles("v1"),
    });
    out.push({
      label: `user${i}`,
      email,
      caller,
      orgId: org.org.id,
      address: published.address as string,
      appName,
      ackedVersions: [{ version: published.version as number, at: Date.now() }],
      publishAttempts: 1,
      ackedShares: [],
      shareAttempts: [],
      ackedInvitations: [],
      inviteAttempts: [],
      rollbacksAcked: 0,
      rollbackAttempts: 0,
      ackedDocs: [],
      docAttempts: 0,
    });
  }
  return out;
}
