import type { Server } from "bun";
import { appOrigin } from "../config.ts";
import type { AppsContext } from "../context.ts";
import { canView, readViewer, signInUrl, viewerCookieName, type Viewer } from "./access.ts";
import { onAppChanged } from "./announce.ts";
import { answerAuthReturn } from "./auth-return.ts";
import { BlobCache } from "./blob-cache.ts";
import { AppCache } from "./cache.ts";
import { pages } from "./pages.ts";
import { storedPathOf } from "./paths.ts";
import { serveSite, type Served } from "./serve.ts";
import { loadHostedApp, type HostedApp } from "./site.ts";
import { StatsCounter } from "./stats.ts";

export interface AppHostOptions {
  /**
   * UPLOADS HOOK (the publish tool's part): answers `PUT /_hatch/uploads/<token>` on the bare apps domain, the
   * one-time upload URLs a manifest publish hands out. Without it those URLs answer 404.
   */
  uploads?: (request: Request, token: string) => Promise<Response>;
  /** How long an app stays cached without an invalidation (default 10 s). */
  cacheTtlMs?: number;
  /** How often counted opens are written (default 2 s). */
  statsFlushMs?: number;
}

export interface AppHost {
  readonly port: number;
  /** Drops this instance's cached copy of an app (announceAppChanged does it on every instance). */
  invalidate(address: string): void;
  /** Writes the opens and viewers counted so far (tests; stop does it too). */
  flushStats(): Promise<void>;
  stop(): Promise<void>;
}

const ADDRESS = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** Upload tokens are 24 random bytes, base64url (publish/uploads.ts); anything else is no upload URL. */
const UPLOAD_PATH = /^\/_hatch\/uploads\/([A-Za-z0-9_-]{16,64})$/;

/**
 * Which site a Host header names: "" for the bare apps domain, an address for `<address>.<apps domain>`, null
 * for anything else. The port is ignored when the apps domain has none (a proxy in front may keep it).
 */
export function addressOfHost(host: string | null, appsDomain: string): string | null {
  if (!host) return null;
  let name = host.toLowerCase();
  if (!appsDomain.includes(":")) name = name.replace(/:\d+$/, "");
  if (name.endsWith(".")) name = name.slice(0, -1);
  if (name === appsDomain) return "";
  if (!name.endsWith(`.${appsDomain}`)) return null;
  const label = name.slice(0, -(appsDomain.length + 1));
  return ADDRESS.test(label) ? label : null;
}

/** The app host: serves published apps on their own origins, and upload URLs on the bare apps domain. */
export function startAppHost(ctx: AppsContext, options: AppHostOptions = {}): AppHost {
  const log = ctx.logger.child({ component: "app-host" });
  const cache = new AppCache((address) => loadHostedApp(ctx.db, address), { ttlMs: options.cacheTtlMs });
  const blobs = new BlobCache(ctx.blobs);
  const stats = new StatsCounter(ctx.db, ctx.keys.stats, log, { flushEveryMs: options.statsFlushMs });
  const cookieName = viewerCookieName(ctx.config);

  // Synchronous whenever the app and the file's bytes are cached: a served file then costs no promise at all.
  function handle(request: Request, server: Server<undefined>): Response | Promise<Response> {
    const url = new URL(request.url);
    const address = addressOfHost(request.headers.get("host"), ctx.config.appsDomain);
    if (address === null) return pages.unknownHost();
    if (address === "") return answerRoot(request, url);
    if (request.method !== "GET" && request.method !== "HEAD") return pages.methodNotAllowed();
    if (url.pathname === "/_hatch/auth") return answerAuthReturn(ctx, url, address);
    // Reserved for Hatch's own routes on every app origin (the browser library will live here).
    if (url.pathname.startsWith("/_hatch/")) return pages.notFound();
    const cached = cache.get(address);
    if (!(cached instanceof Promise)) return cached ? answerApp(request, server, url, cached) : pages.noApp(address);
    return cached.then(
      (app) => (app ? answerApp(request, server, url, app) : pages.noApp(address)),
      (error: unknown) => {
        log.error("app could not be loaded", { address, error });
        return pages.unavailable();
      },
    );
  }

  function answerApp(request: Request, server: Server<undefined>, url: URL, app: HostedApp): Response | Promise<Response> {
    const isPublic = app.visibility === "public";
    const viewer = isPublic ? null : readViewer(request, ctx.keys.viewer, cookieName, app.address);
    if (!isPublic && !canView(app, viewer)) {
      const back = url.pathname + url.search;
      if (!viewer) {
        return new Response(null, { status: 302, headers: { Location: signInUrl(ctx.config.gatewayUrl, app.address, back), "Cache-Control": "no-store" } });
      }
      return pages.forbidden(viewer.email, signInUrl(ctx.config.gatewayUrl, app.address, back, true));
    }
    if (app.paused) return pages.paused();
    if (!app.site) return pages.nothingPublished();
    const path = storedPathOf(url.pathname);
    if (path === null) return pages.notFound();
    const finish = (served: Served): Response => {
      if (served.document && request.method === "GET" && isNavigation(request)) {
        stats.count(app.id, whoIsViewing(request, server, viewer ?? (isPublic ? readViewer(request, ctx.keys.viewer, cookieName, app.address) : null)));
      }
      return served.response;
    };
    const served = serveSite(blobs, log, request, app.site, path, isPublic);
    return served instanceof Promise ? served.then(finish) : finish(served);
  }

  async function answerRoot(request: Request, url: URL): Promise<Response> {
    const upload = UPLOAD_PATH.exec(url.pathname);
    if (upload) {
      if (!options.uploads) return new Response("Uploads are not available on this server.\n", { status: 404 });
      return options.uploads(request, upload[1]!);
    }
    return pages.root(appOrigin(ctx.config, "my-app"));
  }

  function whoIsViewing(request: Request, server: Server<undefined>, viewer: Viewer | null): string {
    if (viewer) return `u:${viewer.sub}`;
    const forwarded = ctx.config.trustProxy ? request.headers.get("x-forwarded-for")?.split(",")[0]?.trim() : undefined;
    const ip = forwarded || server.requestIP(request)?.address || "";
    return `a:${ip}\n${request.headers.get("user-agent") ?? ""}`;
  }

  const failed = (error: unknown): Response => {
    log.error("app host request failed", { error });
    return pages.failed();
  };
  const server = Bun.serve({
    port: ctx.config.appPort,
    hostname: ctx.config.appHostname,
    reusePort: false,
    fetch(request, server) {
      try {
        const response = handle(request, server);
        return response instanceof Promise ? response.catch(failed) : response;
      } catch (error) {
        return failed(error);
      }
    },
  });
  const subscription = onAppChanged(ctx.bus, log, (address) => cache.invalidate(address));

  return {
    port: server.port ?? ctx.config.appPort,
    invalidate: (address) => cache.invalidate(address),
    flushStats: () => stats.flush(),
    async stop() {
      subscription.unsubscribe();
      await server.stop(true);
      await stats.stop();
    },
  };
}

/** A page load in a window or frame; fetch() and XHR of an HTML file send another Sec-Fetch-Dest (old browsers send none). */
function isNavigation(request: Request): boolean {
  const dest = request.headers.get("sec-fetch-dest");
  return dest === null || dest === "document" || dest === "iframe" || dest === "frame";
}
