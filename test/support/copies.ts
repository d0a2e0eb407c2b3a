import { createLogger, createNatsBus, type Bus, type NatsBus } from "@hatch/platform";
import { type ServiceName } from "@hatch/contracts";
import { createGateway, type Gateway } from "@hatch/gateway";
import { startHatch, type Hatch } from "../../scripts/hatch.ts";
import { TEST_SECRET, type TestHatch } from "./hatch.ts";
import { freePort, realServers, testBlobDir, uniqueName, type Mode } from "./servers.ts";
import { embeddedDatabase, migratedDatabase } from "./templates.ts";

/** What the round-robin proxy sent where: the backend (0 or 1) and the JSON-RPC method, or "answer" for a response. */
export interface Routed {
  backend: number;
  what: string;
}

/**
 * Two gateway copies on one bus and one database (in real mode each with its own NATS connection), behind a
 * round-robin proxy without affinity on the public port: consecutive requests alternate copies.
 */
export async function startTwoCopies(
  mode: Mode,
  options: { services?: ServiceName[]; serviceEnv?: Record<string, string> } = {},
): Promise<{
  hatch: TestHatch;
  routed: Routed[];
  copies: Gateway[];
  /** Each copy's own /mcp (behind the proxy's back). */
  copyUrls: string[];
  /** The second copy stops as a crash would: its NATS connection cut, its connections dropped (real mode). */
  crashSecond(): Promise<void>;
  stop(): Promise<void>;
}> {
  const port = freePort();
  // Every schema migrated already (a copy of this process's template), as startTestHatch boots.
  const database = mode === "real" ? await migratedDatabase(realServers!.databaseUrl) : null;
  const logger = createLogger({ level: (process.env.LOG_LEVEL as "warn") ?? "warn" });
  const busPrefix = uniqueName("bus");
  const hatch: Hatch = await startHatch({
    secret: TEST_SECRET,
    logger,
    port,
    databaseUrl: database?.url,
    pglite: database ? undefined : await embeddedDatabase(),
    natsUrl: mode === "real" ? realServers!.natsUrl : undefined,
    busPrefix,
    services: options.services ?? ["orgs"],
    serviceEnv: { APP_PORT: "0", BLOB_DIR: testBlobDir(), BILLING_ENFORCE_LIMITS: "false", ...options.serviceEnv },
    dropEventsStreamOnClose: true,
  });
  const secondBus: Bus =
    mode === "real"
      ? await createNatsBus({ url: realServers!.natsUrl, prefix: busPrefix, name: "gateway-2", logger })
      : hatch.bus;
  const second = createGateway({ config: hatch.config, bus: secondBus, db: hatch.gatewayDb, logger });
  const ports = [freePort(), freePort()];
  const servers = [
    hatch.gateway.listen({ port: ports[0]!, hostname: "127.0.0.1" }),
    second.listen({ port: ports[1]!, hostname: "127.0.0.1" }),
  ];
  const routed: Routed[] = [];
  let next = 0;
  const proxy = Bun.serve({
    port,
    hostname: "127.0.0.1",
    idleTimeout: 120,
    async fetch(request) {
      const backend = next++ % 2;
      const url = new URL(request.url);
      const body = request.method === "POST" ? await request.text() : undefined;
      let what = request.method;
      if (body && url.pathname === "/mcp") {
        try {
          const message = JSON.parse(body) as { method?: string; result?: unknown; error?: unknown };
          what = message.method ?? (message.result !== undefined || message.error !== undefined ? "answer" : "?");
        } catch {}
      }
      routed.push({ backend, what });
      return fetch(`http://127.0.0.1:${ports[backend]}${url.pathname}${url.search}`, {
        method: request.method,
        headers: request.headers,
        body,
        redirect: "manual",
      });
    },
  });
  return {
    hatch: {
      ...hatch,
      mode,
      baseUrl: hatch.config.baseUrl,
      mcpUrl: hatch.config.mcpUrl,
      appHostUrl: "",
      stop: async () => {},
    },
    routed,
    copies: [hatch.gateway, second],
    copyUrls: ports.map((p) => `http://127.0.0.1:${p}/mcp`),
    async crashSecond() {
      if (secondBus === hatch.bus) throw new Error("a crash needs the copy's own bus (real mode)");
      await (secondBus as NatsBus).connection.close();
      await servers[1]!.stop(true);
    },
    async stop() {
      proxy.stop(true);
      for (const server of servers) await server.stop(true);
      await second.close();
      if (secondBus !== hatch.bus) await secondBus.drain().catch(() => {});
      await hatch.close();
      await database?.drop();
    },
  };
}
