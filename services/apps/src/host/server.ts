import type { AppsContext } from "../context.ts";
import { receiveUpload } from "../publish/uploads.ts";

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
      const { pathname } = new URL(request.url);
      const upload = /^\/_hatch\/uploads\/([A-Za-z0-9_-]{16,64})$/.exec(pathname);
      if (upload) return receiveUpload(ctx, request, upload[1]!);
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
