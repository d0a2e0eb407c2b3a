import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createNatsBus, deleteEventsStream } from "@hatch/platform";
import { startCluster, type Cluster } from "../scripts/cluster-lib.ts";
import { TEST_SECRET } from "./support/hatch.ts";
import { freePort, freshDatabase, realServers, testBlobDir, uniqueName } from "./support/servers.ts";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { textOf } from "./support/mcp.ts";

const ROOT = join(import.meta.dir, "..");

// The distributed deployment: every package started alone with `bun run start`, real NATS and Postgres,
// and the admin CLI issuing the token, as an operator would.
describe.skipIf(!realServers)("distributed: gateway and services as separate processes", () => {
  let cluster: Cluster;
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let env: Record<string, string>;
  let busPrefix = "";

  beforeAll(async () => {
    database = await freshDatabase(realServers!.databaseUrl);
    const port = freePort();
    busPrefix = uniqueName("cluster");
    cluster = await startCluster({
      natsUrl: realServers!.natsUrl,
      databaseUrl: database.url,
      secret: TEST_SECRET,
      busPrefix,
      port,
      appPort: freePort(),
      blobDir: testBlobDir(),
      logLevel: "warn",
      stdout: "ignore",
    });
    env = {
      ...(process.env as Record<string, string>),
      DATABASE_URL: database.url,
      HATCH_SECRET: TEST_SECRET,
      PORT: String(port),
      LOG_LEVEL: "warn",
    };
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
    // The services made this run's events stream on the shared NATS server; leave nothing behind.
    const bus = await createNatsBus({ url: realServers!.natsUrl, prefix: busPrefix });
    await deleteEventsStream(bus);
    await bus.drain();
    await database?.drop();
  });

  async function admin(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const child = Bun.spawn(["bun", "run", "admin", ...args], { cwd: ROOT, env, stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
    return { code: await child.exited, stdout, stderr };
  }

  test("admin CLI creates a user and issues a token; whoami works across processes", async () => {
    const created = await admin(
      "user:create",
      "--email",
      "ops@example.com",
      "--password",
      "long enough pw",
      "--name",
      "Ops Person",
    );
    expect(created.code).toBe(0);
    const issued = await admin("token:issue", "--email", "ops@example.com");
    expect(issued.code).toBe(0);
    const token = issued.stdout.trim().split("\n").pop()!;
    expect(token.split(".")).toHaveLength(3);

    const client = new Client({ name: "cursor-vscode", version: "1" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${cluster.baseUrl}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    const who = await client.callTool({ name: "whoami", arguments: {} });
    expect(who.structuredContent).toEqual({ email: "ops@example.com", name: "Ops Person", kind: "personal" });

    const duplicate = await admin(
      "user:create",
      "--email",
      "ops@example.com",
      "--password",
      "long enough pw",
      "--name",
      "Again",
    );
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr).toContain("ops@example.com");

    // Stop the orgs process: the gateway answers at once with a clear message, and healthz names it.
    const orgs = cluster.processes.get("orgs")!;
    orgs.kill("SIGTERM");
    await orgs.exited;
    const fresh = new Client({ name: "cursor-vscode", version: "1" });
    const token2 = (await admin("token:issue", "--email", "ops@example.com")).stdout.trim().split("\n").pop()!;
    await fresh.connect(
      new StreamableHTTPClientTransport(new URL(`${cluster.baseUrl}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${token2}` } },
      }),
    );
    const down = await fresh.callTool({ name: "org", arguments: {} });
    expect(down.isError).toBe(true);
    expect(textOf(down)).toContain("orgs service is not answering");
    const health = await fetch(`${cluster.baseUrl}/healthz`);
    expect(health.status).toBe(503);
    await client.close();
    await fresh.close();
  });
});
