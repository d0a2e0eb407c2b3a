import { DomainNameSchema } from "@hatch/contracts";
import { and, eq, isNotNull } from "drizzle-orm";
import { isIP } from "node:net";
import type { DomainsContext } from "../context.ts";
import { hostnames } from "../db/schema.ts";
import { resolveHostname } from "../rpc/resolve-host.ts";

/** The domains service's HTTP listener: the edge's on-demand TLS `ask` (GET /tls/ask?domain=<hostname>). */
export interface DomainsHttp {
  readonly port: number;
  stop(): Promise<void>;
}

const text = (body: string, status: number) =>
  new Response(`${body}\n`, {
    status,
    headers: { "Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store" },
  });

/**
 * Caddy's on-demand TLS asks before obtaining a certificate: 200 = go ahead, anything else = no. Yes only for a
 * hostname that serves an app (a verified custom or bought hostname, an app address under a verified company
 * domain) or a domain bought through Hatch, so nobody makes the edge request certificates for names Hatch does not serve.
 */
export async function answerAsk(ctx: Pick<DomainsContext, "db" | "logger">, url: URL): Promise<Response> {
  const domain = url.searchParams.get("domain")?.toLowerCase().replace(/\.$/, "") ?? "";
  if (!domain || isIP(domain) !== 0 || !DomainNameSchema.safeParse(domain).success)
    return text("domain must be a host name", 400);
  try {
    const served = await resolveHostname(ctx.db, domain);
    if (served.address) return text("yes", 200);
    // A domain bought through Hatch gets its certificate even before an app is put on it (its stage waits for it).
    const [bought] = await ctx.db
      .select({ hostname: hostnames.hostname })
      .from(hostnames)
      .where(and(eq(hostnames.hostname, domain), eq(hostnames.kind, "bought"), isNotNull(hostnames.verifiedAt)));
    return bought ? text("yes", 200) : text("no", 404);
  } catch (error) {
    ctx.logger.error("tls ask failed", { error });
    return text("unavailable", 503);
  }
}

/** Starts the listener when DOMAINS_HTTP_PORT is set; null otherwise. */
export function startDomainsHttp(ctx: DomainsContext): DomainsHttp | null {
  if (ctx.config.httpPort === null) return null;
  const server = Bun.serve({
    hostname: ctx.config.httpHost,
    port: ctx.config.httpPort,
    fetch: (request) => {
      const url = new URL(request.url);
      if (url.pathname === "/tls/ask")
        return request.method === "GET"
          ? answerAsk(ctx, url)
          : new Response(null, { status: 405, headers: { Allow: "GET" } });
      return text("not found", 404);
    },
  });
  return { port: server.port ?? 0, stop: () => server.stop(true) };
}
