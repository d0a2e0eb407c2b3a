import { TOOL_CONTRACTS } from "@hatch/contracts";
import type { GatewayConfig } from "./config.ts";

/**
 * Seconds a connection may stay silent before Bun closes it, set here rather than left to Elysia's 30 s: the longest
 * tool timeout (publish, buy_domain: 60 s) plus room for the account lookup and rate counting. Today Bun stops the
 * timer once a POST's body is read and the SDK sends SSE keepalives every 15 s, so /mcp does not depend on it; a GET
 * page that waits on a slow service does, and so would /mcp if either changed.
 */
export const IDLE_TIMEOUT_SECONDS = Math.ceil(Math.max(...TOOL_CONTRACTS.map((c) => c.timeoutMs)) / 1000) + 30;

/** Bun.serve settings for the gateway wherever it listens (`bun run dev`, `bun run start`, tests, benches). */
export function listenOptions(config: Pick<GatewayConfig, "maxBodyBytes">, where: { port: number; hostname: string }) {
  return {
    ...where,
    reusePort: false,
    idleTimeout: IDLE_TIMEOUT_SECONDS,
    // Inline publishes are the largest bodies; /mcp checks its own limit and answers in JSON-RPC.
    maxRequestBodySize: config.maxBodyBytes * 2,
  };
}
