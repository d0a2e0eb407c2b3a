import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGateway, type Gateway } from "@hatch/gateway";
import { listenOptions } from "../gateway/src/listen.ts";
import { createLogger, createNatsBus, type Bus, type NatsBus } from "@hatch/platform";
import { deriveKey, type CallContextClaims } from "@hatch/contracts";
import { Client as Client2026, StreamableHTTPClientTransport as Transport2026 } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import type { Subprocess } from "bun";
import type { Browser } from "playwright-core";
import { startHatch, type Hatch } from "../scripts/hatch.ts";
import { addTestCard, gatewaySignedContext } from "./support/call-context.ts";
import { startCaddy } from "./support/caddy.ts";
import { CHROMIUM, hasChromium, launchChromium } from "./support/chromium.ts";
import { eventually } from "./support/eventually.ts";
import { TEST_SECRET } from "./support/hatch.ts";
import { textOf } from "./support/mcp.ts";
import { mcpRemote } from "./support/mcp-remote.ts";
import type { Output } from "./support/processes.ts";
import { folderTar } from "./support/publish-tar.ts";
import { ADA_REGISTRANT } from "./support/registrant.ts";
import { freePort, freshDatabase, realServers, testBlobDir, uniqueName } from "./support/servers.ts";

// The proof with real clients: each client walks through Hatch (sign-in, whoami, publish with upload, public share
// with its question, delete with its question, buying a domain with its question) against two gateway copies behind
// Caddy's round robin without affinity, so consecutive requests alternate copies. Midway through each walk one copy
// is killed (its NATS connection cut and its connections dropped, as a crash does); the walk may cost at most one
// error, which a retry gets past. The copy is started again before the next client. One mode: on the real servers
// when they are given (two copies sharing NATS and Postgres), else embedded.

const MCP_REMOTE_1 = join(import.meta.dir, "../node_modules/mcp-remote/dist/proxy.js");
const MCP_REMOTE_15 = join(import.meta.dir, "../node_modules/mcp-remote-15/dist/proxy.js");
const PASSWORD = "correct horse battery";
const STEPS = [
  "sign-in",
  "whoami",
  "publish (upload)",
  "share public (question)",
  "delete (question)",
  "buy domain (question)",
];

const missing = [hasChromium ? null : CHROMIUM, Bun.which("caddy") ? null : "caddy"].filter(Boolean);
const mode = realServers ? "real" : "embedded";
const suiteName = missing.length
  ? `client walk through two gateway copies behind Caddy (SKIPPED: ${missing.join(", ")} missing; apt-get install -y chromium caddy)`
  : `client walk through two gateway copies behind Caddy (${mode})`;

/** Anything the walk can call a tool on: the SDK clients of both eras, or the SDK v1 client over mcp-remote. */
interface ToolCaller {
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
  close(): Promise<void>;
}

/** Forms shown to the user in the current walk. */
let formsShown = 0;

/** What the user answers in a form: yes to every checkbox, the registrant's details for a domain. */
function answerForm(schema: unknown): Record<string, string | number | boolean> {
  formsShown++;
  const properties = (schema as { properties?: Record<string, { type?: string; enum?: string[] }> }).properties ?? {};
  const answer: Record<string, string | number | boolean> = {};
  for (const [key, field] of Object.entries(properties)) {
    if (field.type === "boolean") answer[key] = true;
    else if (key in ADA_REGISTRANT) answer[key] = ADA_REGISTRANT[key as keyof typeof ADA_REGISTRANT];
    else if (field.enum?.[0] !== undefined) answer[key] = field.enum[0];
  }
  return answer;
}

describe.skipIf(missing.length > 0)(suiteName, () => {
  let hatch: Hatch;
  let database: Awaited<ReturnType<typeof freshDatabase>> | null = null;
  let browser: Browser;
  let caddy: Subprocess<"ignore", "pipe", "pipe"> | undefined;
  let caddyOut: Output;
  let dir = "";
  const publicPort = freePort();
  const copyPorts = [freePort(), freePort()];
  /** /mcp requests each copy answered in the current walk. */
  const served = [0, 0];
  /** Every request each copy answered (for knowing when Caddy sends to a restarted copy again). */
  const hits = [0, 0];
  /** The MCP-Protocol-Version headers of the current walk's /mcp requests. */
  const versions = new Set<string>();
  let second: { gateway: Gateway; bus: Bus; server: ReturnType<typeof Bun.serve> } | null = null;
  let first: ReturnType<typeof Bun.serve>;
  const logger = createLogger({ level: (process.env.LOG_LEVEL as "warn") ?? "error" });
  const busPrefix = uniqueName("bus");
  const ctxKey = deriveKey(TEST_SECRET, "ctx");
  /** The client matrix: which steps each client passed, and the errors the kill cost it. */
  const matrix: { client: string; era: string; passed: string[]; errors: string[] }[] = [];

  const serveCopy = (gateway: Gateway, index: number) =>
    Bun.serve({
      ...listenOptions(hatch.config, { port: copyPorts[index]!, hostname: "127.0.0.1" }),
      fetch(request) {
        hits[index]!++;
        if (new URL(request.url).pathname === "/mcp") {
          served[index]!++;
          const version = request.headers.get("mcp-protocol-version");
          if (version) versions.add(version);
        }
        return gateway.app.handle(request);
      },
    });

  async function startSecond(): Promise<void> {
    const bus: Bus =
      mode === "real"
        ? await createNatsBus({ url: realServers!.natsUrl, prefix: busPrefix, name: "gateway-2", logger })
        : hatch.bus;
    const gateway = createGateway({ config: hatch.config, bus, db: hatch.gatewayDb, logger });
    second = { gateway, bus, server: serveCopy(gateway, 1) };
  }

  /** The second copy dies as a crash would: no goodbye on the bus, its connections dropped. */
  async function killSecond(): Promise<void> {
    const copy = second!;
    second = null;
    if (copy.bus !== hatch.bus) await (copy.bus as NatsBus).connection.close();
    await copy.server.stop(true);
    await copy.gateway.close().catch(() => {});
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "hatch-walk-"));
    database = mode === "real" ? await freshDatabase(realServers!.databaseUrl) : null;
    hatch = await startHatch({
      secret: TEST_SECRET,
      logger,
      port: publicPort,
      databaseUrl: database?.url,
      natsUrl: mode === "real" ? realServers!.natsUrl : undefined,
      busPrefix,
      serviceEnv: {
        APP_PORT: "0",
        BLOB_DIR: testBlobDir(),
        BILLING_ENFORCE_LIMITS: "false",
        SIMULATED_REGISTRAR_STEP_MS: "40",
        DOMAINS_JOB_POLL_MS: "20",
      },
      dropEventsStreamOnClose: true,
    });
    first = serveCopy(hatch.gateway, 0);
    await startSecond();
    // Round robin without affinity. A request a copy could not take (refused, or its kept-alive connection dropped) is
    // tried on the other (bodies are buffered so they can be sent again), and that copy is left out for two seconds;
    // SSE is passed on as it comes.
    ({ process: caddy, output: caddyOut } = startCaddy(
      dir,
      `{
  admin off
  auto_https off
  grace_period 1s
  storage file_system ${join(dir, "caddy-data")}
}

http://:${publicPort} {
  reverse_proxy 127.0.0.1:${copyPorts[0]} 127.0.0.1:${copyPorts[1]} {
    lb_policy round_robin
    lb_try_duration 5s
    lb_try_interval 100ms
    buffer_requests
    fail_duration 2s
    max_fails 1
    flush_interval -1
  }
}
`,
    ));
    await eventually(
      async () => (await fetch(`${hatch.config.baseUrl}/healthz`).catch(() => null))?.ok === true,
      `caddy on ${publicPort}\n${caddyOut.text}`,
      20_000,
    );
    browser = await launchChromium();
  }, 90_000);

  afterAll(async () => {
    process.stderr.write(
      `\nclient matrix (${mode}):\n${matrix
        .map(
          (row) =>
            `  ${row.client.padEnd(22)} ${row.era.padEnd(11)} ${STEPS.map((s) => `${row.passed.includes(s) ? "✓" : "✗"} ${s}`).join(", ")}; errors: ${row.errors.length ? row.errors.join(" | ") : "none"}`,
        )
        .join("\n")}\n`,
    );
    await browser?.close();
    caddy?.kill();
    await caddy?.exited;
    first?.stop(true);
    if (second) await killSecond();
    await hatch?.close();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  async function newUser(name: string) {
    const email = `${name.toLowerCase().replace(/[^a-z0-9]+/g, "-")}-${process.pid}@example.com`;
    return hatch.gateway.auth.createUser({ email, password: PASSWORD, name }, { verified: true });
  }

  /** A card on file for the user's account, as the local provider's checkout page adds it. */
  async function addCard(user: { id: string; email: string; name: string }) {
    const base: CallContextClaims = {
      sub: user.id,
      email: user.email,
      name: user.name,
      permissions: [],
      scope: "write",
      client: { kind: "other", name: "walk", elicitation: { form: false, url: false } },
      grant: "walk",
      rid: "walk",
    };
    await addTestCard(hatch.bus, await gatewaySignedContext(hatch.gateway, ctxKey, base));
  }

  /** The person's side of an OAuth sign-in, in Chromium: from the client's authorize URL to its callback. */
  async function signInInBrowser(authorizeUrl: string, email: string): Promise<void> {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(authorizeUrl);
    expect(new URL(page.url()).pathname).toBe("/signin");
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(PASSWORD);
    await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Sign in", exact: true }).click()]);
    expect(await page.getByRole("heading", { level: 1 }).innerText()).toMatch(/^Connect .+\?$/);
    // Approving sends the browser to the client's own callback server, which takes the code.
    await Promise.all([
      page.waitForURL((url) => url.port !== String(publicPort)),
      page.getByRole("button", { name: "Allow full access" }).click(),
    ]);
    await context.close();
  }

  /** The SDK v1 client over mcp-remote's stdio, signed in through Chromium; form questions answered as a person would. */
  async function viaMcpRemote(script: string, args: string[], email: string): Promise<ToolCaller> {
    const home = mkdtempSync(join(dir, "mcp-remote-"));
    const { transport, printedUrl, said } = mcpRemote(script, hatch.config.mcpUrl, home, args);
    const client = new Client({ name: "walk-desktop", version: "1.0.0" }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async (request) => ({
      action: "accept",
      content: answerForm("requestedSchema" in request.params ? request.params.requestedSchema : {}),
    }));
    const connected = client.connect(transport);
    await signInInBrowser(await printedUrl, email);
    await connected.catch((error: Error) => {
      throw new Error(`${error.message}\n${said().slice(-3000)}`);
    });
    return client as unknown as ToolCaller;
  }

  async function sdkV1(token: string): Promise<ToolCaller> {
    const client = new Client({ name: "claude-code", version: "2.0.0" }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async (request) => ({
      action: "accept",
      content: answerForm("requestedSchema" in request.params ? request.params.requestedSchema : {}),
    }));
    await client.connect(
      new StreamableHTTPClientTransport(new URL(hatch.config.mcpUrl), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    return client as unknown as ToolCaller;
  }

  async function sdkV2(token: string): Promise<ToolCaller> {
    const client = new Client2026(
      { name: "claude-code", version: "3.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } }, capabilities: { elicitation: { form: {} } } },
    );
    client.setRequestHandler("elicitation/create", async (request) => ({
      action: "accept",
      content: answerForm((request.params as { requestedSchema?: unknown }).requestedSchema ?? {}),
    }));
    await client.connect(
      new Transport2026(new URL(hatch.config.mcpUrl), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    return client as unknown as ToolCaller;
  }

  /**
   * One client's walk. `connect` signs in (a browser sign-in for mcp-remote, the test's token for the SDK clients).
   * Each tool step may fail once (the copy just killed) and must pass when tried again.
   */
  async function walk(client: string, era: string, connect: (user: { email: string }) => Promise<ToolCaller>) {
    // `era` is the protocol version the client must speak on the wire (every /mcp request's MCP-Protocol-Version).
    const row = { client, era, passed: [] as string[], errors: [] as string[] };
    matrix.push(row);
    served[0] = served[1] = 0;
    formsShown = 0;
    versions.clear();
    const tag = client.toLowerCase().replace(/[^a-z0-9]+/g, "");
    const user = await newUser(`Walk ${client}`);
    const ai = await connect(user);
    row.passed.push("sign-in");
    const call = async (name: string, args: Record<string, unknown>) => {
      for (let attempt = 1; ; attempt++) {
        try {
          const result = (await ai.callTool({ name, arguments: args })) as { isError?: boolean };
          if (result.isError) throw new Error(textOf(result));
          return result as { structuredContent: Record<string, unknown> };
        } catch (error) {
          row.errors.push(`${name}: ${(error as Error).message.slice(0, 160)}`);
          if (attempt >= 2) throw error;
        }
      }
    };
    try {
      const whoami = await call("whoami", {});
      expect(textOf(whoami)).toContain(user.email);
      row.passed.push("whoami");

      const offer = await call("publish", { upload: true, name: `Walk ${tag}`, visibility: "private" });
      expect(offer.structuredContent.status).toBe("needs_upload");
      const folder = new Map([["index.html", new TextEncoder().encode(`<!doctype html><title>${tag}</title>`)]]);
      const put = await fetch(offer.structuredContent.uploadUrl as string, { method: "PUT", body: folderTar(folder) });
      const putText = await put.text();
      expect([put.status, putText]).toEqual([201, expect.stringContaining("Created the app")]);
      const address = / at ([a-z0-9-]+), version 1/.exec(putText)?.[1];
      expect(address).toBeTruthy();
      row.passed.push("publish (upload)");

      // Midway: one copy dies.
      await killSecond();

      const shared = await call("share", { address, visibility: "public" });
      expect(shared.structuredContent).toMatchObject({ status: "updated", visibility: "public" });
      row.passed.push("share public (question)");

      const deleted = await call("delete_tool", { address });
      expect(deleted.structuredContent).toEqual({ status: "deleted", address });
      row.passed.push("delete (question)");

      await addCard({ ...user, name: `Walk ${client}` });
      const domain = `walk-${tag}-${mode === "real" ? "r" : "e"}.com`;
      const bought = await call("buy_domain", { domain });
      expect(bought.structuredContent).toMatchObject({ status: "bought", domain });
      row.passed.push("buy domain (question)");
    } finally {
      await ai.close().catch(() => {});
      if (!second) {
        await startSecond();
        // Caddy leaves a copy that failed out for a moment; the next walk starts once it is back in the rotation.
        const before = hits[1]!;
        await eventually(async () => {
          await fetch(`${hatch.config.baseUrl}/healthz`);
          return hits[1]! > before;
        }, "Caddy to send to the restarted copy");
      }
    }
    expect([...versions]).toEqual([era]);
    expect(row.errors.length).toBeLessThanOrEqual(1);
    // The three questions were forms the client showed (not links or instructions).
    expect(formsShown).toBe(3);
    // No affinity: both copies answered this client's requests before the kill.
    expect(served[0]).toBeGreaterThan(0);
    expect(served[1]).toBeGreaterThan(0);
  }

  const tokenFor = async (email: string) => (await hatch.gateway.auth.issueTokenForScript({ email })).accessToken;

  test("SDK v2 client (2026-07-28)", async () => {
    await walk("SDK v2", "2026-07-28", async (user) => sdkV2(await tokenFor(user.email)));
  }, 90_000);

  test("SDK v1 client (2025-11-25)", async () => {
    await walk("SDK v1", "2025-11-25", async (user) => sdkV1(await tokenFor(user.email)));
  }, 90_000);

  test("mcp-remote 0.1.49, signed in in Chromium", async () => {
    await walk("mcp-remote 0.1.49", "2025-11-25", (user) => viaMcpRemote(MCP_REMOTE_1, [], user.email));
  }, 120_000);

  test("mcp-remote 0.15.1 --protocol auto, signed in in Chromium", async () => {
    await walk("mcp-remote 0.15.1", "2026-07-28", (user) =>
      viaMcpRemote(MCP_REMOTE_15, ["--protocol", "auto"], user.email),
    );
  }, 120_000);
});
