import type { DomainsContext } from "../context.ts";

/** The domains service's HTTP listener: the edge's on-demand TLS `ask` (GET /tls/ask?domain=<hostname>). */
export interface DomainsHttp {
  readonly port: number;
  stop(): Promise<void>;
}

/** Starts the listener when DOMAINS_HTTP_PORT is set; null otherwise. */
export function startDomainsHttp(ctx: DomainsContext): DomainsHttp | null {
  if (ctx.config.httpPort === null) return null;
  const server = Bun.serve({
    hostname: ctx.config.httpHost,
    port: ctx.config.httpPort,
    fetch: () => new Response("not found", { status: 404 }),
  });
  return { port: server.port ?? 0, stop: () => server.stop(true) };
}
