// (b) What `bun run dev` runs: the gateway and every service in one process, the in-process bus and PGlite
// (in memory here, so no `.data/` is touched). Creates a user and a token through the gateway's own admin
// functions and prints `BENCH_READY {"mcpUrl": …, "token": …}` on stdout.
import { createLogger, LOG_LEVELS, type LogLevel } from "@hatch/platform";
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startHatch } from "../scripts/hatch.ts";
import { MARKER } from "./children.ts";

const port = Number(process.env.PORT);
if (!Number.isInteger(port) || port <= 0) {
  process.stderr.write("embedded-server: PORT is required\n");
  process.exit(2);
}
const level = (LOG_LEVELS as readonly string[]).includes(process.env.LOG_LEVEL ?? "")
  ? (process.env.LOG_LEVEL as LogLevel)
  : "warn";

const hatch = await startHatch({
  secret: randomBytes(32).toString("hex"),
  logger: createLogger({ level }),
  port,
  // The bench's raised caps (BENCH_GATEWAY_ENV in targets.ts): nothing refused, every call still counted.
  gatewayConfig: {
    maxSessionsPerUser: Number(process.env.MAX_SESSIONS_PER_USER ?? 20),
    toolCallsPerMinutePerGrant: Number(process.env.TOOL_CALLS_PER_MINUTE_PER_GRANT ?? 300),
    toolCallsPerMinutePerUser: Number(process.env.TOOL_CALLS_PER_MINUTE_PER_USER ?? 600),
  },
  serviceEnv: { APP_PORT: "0", BLOB_DIR: mkdtempSync(join(tmpdir(), "hatch-bench-blobs-")) },
});
const server = hatch.gateway.listen({ port, hostname: "127.0.0.1" });

const email = "embedded@bench.example";
await hatch.gateway.auth.createUser({ email, password: "bench password 123", name: "Embedded Bench" });
const { accessToken } = await hatch.gateway.auth.issueTokenForScript({ email, ttlSeconds: 3_600 });
process.stdout.write(
  `${MARKER}READY ${JSON.stringify({ mcpUrl: `http://127.0.0.1:${port}/mcp`, token: accessToken })}\n`,
);

const stop = async () => {
  await server.stop(true);
  await hatch.close();
  process.exit(0);
};
process.once("SIGTERM", () => void stop());
process.once("SIGINT", () => void stop());
