import type { AppsContext } from "../context.ts";

export interface AppHost {
  readonly port: number;
  stop(): Promise<void>;
}

/** The app host: serves published apps on their own origins, and upload URLs on the bare apps domain. */
export function startAppHost(ctx: AppsContext): AppHost {
  const server = Bun.serve({
    port: ctx.config.appPort,
    hostname: ctx.config.appHostname,
    reusePort: false,
    async fetch(request) {
      return new Response("Not Found", { status: 404 });
    },
  });
  return {
    port: server.port ?? ctx.config.appPort,
    async stop() {
      await server.stop(true);
    },
  };
}
