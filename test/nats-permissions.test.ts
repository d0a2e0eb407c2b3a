import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createNatsBus, createRateCounter, encodeJson, eventStreamFor, type NatsBus } from "@hatch/platform";
import { newEvent, type HatchEvent } from "@hatch/contracts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startCluster } from "../scripts/cluster-lib.ts";
import { TEST_SECRET } from "./support/hatch.ts";
import { freePort, freshDatabase, realServers, testBlobDir } from "./support/servers.ts";

// deploy/nats-auth.conf (what compose.yaml runs): one NATS user per process with subject permissions. A nats-server of
// our own runs that very file; each check connects as a process does (NATS_USER / NATS_PASSWORD) under a bus prefix.

const CONFIG = new URL("../deploy/nats-auth.conf", import.meta.url).pathname;
const PASSWORDS = {
  gateway: "gateway-pass-1",
  apps: "apps-pass-12",
  orgs: "orgs-pass-123",
  billing: "billing-pass",
  domains: "domains-pass",
};
const hasNatsServer = Bun.which("nats-server") !== null;
const PREFIX = "hatch";

describe.skipIf(!hasNatsServer)("NATS permissions (deploy/nats-auth.conf)", () => {
  let server: ReturnType<typeof Bun.spawn>;
  let url = "";
  let store = "";
  const buses: NatsBus[] = [];

  const as = async (user: keyof typeof PASSWORDS) => {
    const bus = await createNatsBus({ url, prefix: PREFIX, name: `perm-${user}`, user, pass: PASSWORDS[user] });
    buses.push(bus);
    return bus;
  };

  beforeAll(async () => {
    store = mkdtempSync(join(tmpdir(), "hatch-nats-perm-"));
    const port = freePort();
    url = `nats://127.0.0.1:${port}`;
    const env = Object.fromEntries(
      Object.entries(PASSWORDS).map(([user, pass]) => [`NATS_${user.toUpperCase()}_PASSWORD`, pass]),
    );
    server = Bun.spawn(["nats-server", "-c", CONFIG, "-p", String(port), "-js", "-sd", store], {
      env: { ...process.env, ...env },
      stdout: "ignore",
      stderr: "pipe",
    });
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        await (await as("gateway")).flush();
        break;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await Bun.sleep(100);
      }
    }
  }, 20_000);

  // Each test's connections go with it: a stand-in answering tools.orgs.* must not take a later test's calls.
  afterEach(async () => {
    for (const bus of buses.splice(0)) await bus.drain().catch(() => undefined);
  });

  afterAll(async () => {
    server?.kill();
    await server?.exited;
    rmSync(store, { recursive: true, force: true });
  });

  test("a wrong password does not connect", async () => {
    await expect(createNatsBus({ url, prefix: PREFIX, user: "apps", pass: "not-the-password" })).rejects.toThrow();
  });

  test("the gateway sends tool calls; a service cannot call another service's tools", async () => {
    const orgs = await as("orgs");
    const asked: string[] = [];
    orgs.subscribe(
      "tools.orgs.whoami",
      (msg) => {
        asked.push(new TextDecoder().decode(msg.data));
        return { data: encodeJson({ ok: true }) };
      },
      { queue: "orgs" },
    );
    await orgs.flush();
    const gateway = await as("gateway");
    const answer = await gateway.request("tools.orgs.whoami", "from the gateway", { timeoutMs: 2_000 });
    expect(JSON.parse(new TextDecoder().decode(answer.data))).toEqual({ ok: true });

    const apps = await as("apps");
    await expect(apps.request("tools.orgs.whoami", "from apps", { timeoutMs: 1_000 })).rejects.toThrow();
    expect(asked).toEqual(["from the gateway"]);
  });

  test("a service publishes its own events, not another's; plain subscribers see only its own", async () => {
    const gateway = await as("gateway");
    const seen: string[] = [];
    gateway.subscribe("events.>", (msg) => void seen.push(msg.subject));
    await gateway.flush();
    const apps = await as("apps");
    apps.publish("events.orgs.member.removed", "forged by apps");
    apps.publish("events.apps.app.published", "its own");
    await apps.flush();
    // Messages of one connection arrive in order: once its own event is here, the forged one would have been too.
    const deadline = Date.now() + 5_000;
    while (!seen.includes("events.apps.app.published") && Date.now() < deadline) await Bun.sleep(20);
    expect(seen).toEqual(["events.apps.app.published"]);
  });

  test("through JetStream too: apps stores its own event in the events stream and cannot store orgs'", async () => {
    const apps = await as("apps");
    const stream = eventStreamFor(apps);
    const own: HatchEvent = newEvent("apps", null, {
      entity: "app",
      verb: "published",
      summary: "own",
      app: "a",
      account: "acc",
      org: null,
      details: {},
    });
    await stream.publish(own);
    const forged: HatchEvent = newEvent("orgs", null, {
      entity: "member",
      verb: "removed",
      summary: "forged",
      app: null,
      account: "acc",
      org: null,
      details: {},
    });
    await expect(stream.publish(forged)).rejects.toThrow();
  });

  test.skipIf(!realServers)(
    "the whole cluster works with a NATS user per process: a tool call crosses gateway, orgs and the events stream",
    async () => {
      const database = await freshDatabase(realServers!.databaseUrl);
      const port = freePort();
      const cluster = await startCluster({
        natsUrl: url,
        databaseUrl: database.url,
        secret: TEST_SECRET,
        busPrefix: PREFIX,
        port,
        appPort: freePort(),
        blobDir: testBlobDir(),
        logLevel: "warn",
        stdout: "ignore",
        natsPasswords: PASSWORDS,
      });
      try {
        const env = {
          ...(process.env as Record<string, string>),
          DATABASE_URL: database.url,
          HATCH_SECRET: TEST_SECRET,
          PORT: String(port),
          LOG_LEVEL: "warn",
        };
        const run = async (...args: string[]) => {
          const child = Bun.spawn(["bun", "run", "admin", ...args], {
            cwd: join(import.meta.dir, ".."),
            env,
            stdout: "pipe",
            stderr: "pipe",
          });
          const stdout = await new Response(child.stdout).text();
          expect(await child.exited).toBe(0);
          return stdout;
        };
        await run("user:create", "--email", "perm@example.com", "--password", "long enough pw", "--name", "Perm");
        const token = (await run("token:issue", "--email", "perm@example.com")).trim().split("\n").pop()!;
        const client = new Client({ name: "cursor-vscode", version: "1" });
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${cluster.baseUrl}/mcp`), {
            requestInit: { headers: { Authorization: `Bearer ${token}` } },
          }),
        );
        const who = await client.callTool({ name: "whoami", arguments: {} });
        expect(who.structuredContent).toEqual({ email: "perm@example.com", name: "Perm", kind: "personal" });
        const org = await client.callTool({ name: "org_setup", arguments: { action: "create", name: "Permitted" } });
        expect(org.isError).not.toBe(true);
        // The orgs event went through the stream to the activity log (orgs' own durable consumer).
        const deadline = Date.now() + 15_000;
        let entries: unknown[] = [];
        while (entries.length === 0 && Date.now() < deadline) {
          const activity = await client.callTool({ name: "org_activity", arguments: {} });
          entries = ((activity.structuredContent as { entries?: unknown[] } | undefined)?.entries ?? []) as unknown[];
          if (entries.length === 0) await Bun.sleep(200);
        }
        expect(entries.length).toBeGreaterThan(0);
        await client.close();
      } finally {
        await cluster.stop();
        await database.drop();
      }
    },
    90_000,
  );

  test("only the gateway writes the gateway's rate counters; the app host writes only its own bucket", async () => {
    const gateway = createRateCounter(await as("gateway"));
    expect(await gateway.take("tools:grant:g1", 5, 60_000)).toEqual({ allowed: true, retryAfterSeconds: 0 });
    const apps = createRateCounter(await as("apps"));
    await expect(apps.take("tools:grant:g1", 5, 60_000)).rejects.toThrow();
    const appsOwn = createRateCounter(await as("apps"), 2 * 60_000, "apps");
    expect(await appsOwn.take("data:viewer", 5, 60_000)).toMatchObject({ allowed: true });
    const orgsInApps = createRateCounter(await as("orgs"), 2 * 60_000, "apps");
    await expect(orgsInApps.take("data:viewer", 5, 60_000)).rejects.toThrow();
  });

  test("a service answers only its own rpc methods: apps cannot take orgs' calls", async () => {
    const apps = await as("apps");
    const taken: string[] = [];
    apps.subscribe("rpc.orgs.session.resolve", (msg) => void taken.push(msg.subject));
    await apps.flush().catch(() => undefined);
    const gateway = await as("gateway");
    await gateway.request("rpc.orgs.session.resolve", "{}", { timeoutMs: 500 }).catch(() => undefined);
    expect(taken).toEqual([]);
  });
});
