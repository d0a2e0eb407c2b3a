// The gateway's own CPU per `whoami` in each protocol era, in one process: `bun bench/gateway-eras.ts`.
// Runs Hatch as `bun run dev` does (in-process bus, PGlite in memory), captures one real tools/call of each era's SDK
// client, then replays it into the gateway's handler (`app.handle`, no socket) from 32 concurrent callers, the orgs
// whoami reply answered from a copy of the first one, so the figure is the gateway's work alone: token check,
// session or per-request MCP server, rate leases, the signed context, the bus request and the answer. Alternates the
// eras (ROUNDS, N calls each) and prints CPU µs per call. Not part of `bun run bench`.
import { createLogger } from "@hatch/platform";
import { Client as Client2026, StreamableHTTPClientTransport as Transport2026 } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startHatch } from "../scripts/hatch.ts";
import { freePort } from "./children.ts";

type Era = "2025" | "2026";
const CALLERS = 32;
const N = Number(process.env.N ?? 6000);
const ROUNDS = Number(process.env.ROUNDS ?? 4);

const port = freePort();
const hatch = await startHatch({
  secret: randomBytes(32).toString("hex"),
  logger: createLogger({ level: "warn" }),
  port,
  gatewayConfig: { maxSessionsPerUser: 64, toolCallsPerMinutePerGrant: 1e9, toolCallsPerMinutePerUser: 1e9 },
  serviceEnv: { APP_PORT: "0", BLOB_DIR: mkdtempSync(join(tmpdir(), "hatch-bench-blobs-")) },
});
const server = hatch.gateway.listen({ port, hostname: "127.0.0.1" });
await hatch.gateway.auth.createUser({ email: "eras@bench.example", password: "bench password 123", name: "Eras" });
const { accessToken } = await hatch.gateway.auth.issueTokenForScript({ email: "eras@bench.example", ttlSeconds: 3600 });
const url = `http://127.0.0.1:${port}/mcp`;
const headers = { Authorization: `Bearer ${accessToken}` };

// One real tools/call of each era's client, as sent (headers, body; the 2025 one carries its session id).
const captured = new Map<Era, { headers: Headers; body: string }>();
let era: Era = "2026";
const capture = async (input: string | URL, init?: RequestInit): Promise<Response> => {
  if (init?.method === "POST" && typeof init.body === "string" && init.body.includes('"tools/call"'))
    captured.set(era, { headers: new Headers(init.headers), body: init.body });
  return fetch(input, init);
};
const info = { name: "hatch-bench", version: "1.0.0" };
const modern = new Client2026(info, { versionNegotiation: { mode: { pin: "2026-07-28" } }, capabilities: {} });
await modern.connect(
  new Transport2026(new URL(url), {
    requestInit: { headers },
    fetch: Object.assign(capture, { preconnect: fetch.preconnect }),
  }),
);
await modern.callTool({ name: "whoami", arguments: {} });
era = "2025";
const legacy = new Client(info, { capabilities: {} });
await legacy.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers }, fetch: capture }));
await legacy.callTool({ name: "whoami", arguments: {} });

// From here orgs' whoami is answered with a copy of its first reply: the gateway's work stays, the handler's goes.
const bus = hatch.bus;
const request = bus.request.bind(bus);
const replies = new Map<string, Awaited<ReturnType<typeof request>>>();
bus.request = async (subject, data, options) => {
  if (!subject.endsWith(".whoami")) return request(subject, data, options);
  let reply = replies.get(subject);
  if (!reply) {
    reply = await request(subject, data, options);
    replies.set(subject, reply);
  }
  return { subject, data: reply.data.slice(), headers: { ...reply.headers } };
};

let nextId = 1_000;
async function call(which: Era): Promise<void> {
  const sent = captured.get(which)!;
  // A 2025 session answers by request id: each call its own.
  const body = sent.body.replace(/"id":\d+/, `"id":${++nextId}`);
  const response = await hatch.gateway.app.handle(new Request(url, { method: "POST", headers: sent.headers, body }));
  const text = await response.text();
  if (response.status !== 200 || !text.includes("eras@bench.example"))
    throw new Error(`${which}: ${response.status} ${text.slice(0, 300)}`);
}

async function cpuPerCall(which: Era): Promise<number> {
  let left = N;
  const before = process.cpuUsage();
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      while (left-- > 0) await call(which);
    }),
  );
  const used = process.cpuUsage(before);
  return Math.round((used.user + used.system) / N);
}

await cpuPerCall("2026");
await cpuPerCall("2025");
const figures: Record<Era, number[]> = { "2025": [], "2026": [] };
for (let round = 0; round < ROUNDS; round++)
  for (const which of ["2026", "2025"] as const) figures[which].push(await cpuPerCall(which));
process.stdout.write(
  `gateway CPU µs per whoami, ${CALLERS} concurrent callers, ${N} calls a round: ${JSON.stringify(figures)}\n`,
);

await modern.close().catch(() => {});
await legacy.close().catch(() => {});
await server.stop(true);
await hatch.close();
process.exit(0);
