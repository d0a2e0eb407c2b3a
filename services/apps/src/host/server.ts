import type { Server } from "bun";
import { isToolError, type HostResolved } from "@hatch/contracts";
import { AI_LIMITS, SERVER_LIMITS } from "../spec/server-code.ts";
import { clientAddressOf, metrics, statusClass } from "@hatch/platform";
import { appOrigin, type AppsConfig } from "../config.ts";
import type { AppsContext } from "../context.ts";
import { createDataRoutes } from "../data/routes.ts";
import { LiveChanges } from "../data/live.ts";
import { createCallerGate } from "../http/caller.ts";
import { storedPathOf } from "../http/paths.ts";
import { loadHostedApp, type HostedApp } from "../http/site.ts";
import {
  canView,
  clearedViewerCookie,
  readViewerSession,
  signInUrl,
  viewerCookieName,
  type Viewer,
} from "../http/viewer.ts";
import { LiveViewers } from "../http/viewers.ts";
import { createOutbound } from "../apis/outbound.ts";
import type { Outbound } from "../http/outbound.ts";
import { TAR_MAX_BYTES } from "../publish/folder-upload.ts";
import { createServerCode, type ServerCodeOptions } from "../server-code/route.ts";
import { followAppEvents } from "./app-changes.ts";
import { answerAuthReturn } from "./auth-return.ts";
import { BlobCache } from "./blob-cache.ts";
import { AppCache } from "./cache.ts";
import { CustomHosts, hostnameOfHost } from "./custom-hosts.ts";
import { createHatchRoutes } from "./hatch-routes.ts";
import { pages } from "./pages.ts";
import { addressOfHost, previewOfHost, type Preview } from "./host-names.ts";
import { createPreviewRoute } from "./preview.ts";
import { serveSite, type Served } from "./serve.ts";
import { StatsCounter } from "./stats.ts";

// The app host is the router: it finds the app a request's Host names (cached, dropped on the apps events), serves
// its files, and hands everything else to a route family (hatch-routes.ts): data, server code, outbound calls; the
// uploads of the bare apps domain come in as a hook (the publish family's route).

export interface AppHostOptions {
  /**
   * UPLOADS HOOK (the publish tool's part): answers `PUT /_hatch/uploads/<token>[/<path>]` on the bare apps domain,
   * the one-time upload URLs publish hands out (a folder's tar, a manifest's files). Without it they answer 404.
   */
  uploads?: (request: Request, token: string, path?: string) => Promise<Response>;
  /** How long an app stays cached without an invalidation (default 10 s). */
  cacheTtlMs?: number;
  /** How often counted opens are written (default 2 s). */
  statsFlushMs?: number;
  /** How long the gateway's answer about a viewer is trusted without a broadcast (default 30 s). */
  viewerTtlMs?: number;
  /** How often open data event streams get a ping and their viewer is checked again (default 25 s). */
  livePingMs?: number;
  /** Server code: sandbox workers, limits (tests shrink them) and how often log lines are written. */
  serverCode?: ServerCodeOptions;
  /** Declared API and AI calls (tests pass a fake; default createOutbound). */
  outbound?: Outbound;
  /** The socket opened before the context (listenAppHost); absent, the host opens its own on ctx.config's port. */
  listener?: AppHostListener;
  /** How long the domains service's answer about a custom hostname is kept without a broadcast (default 10 s). */
  hostTtlMs?: number;
}

export interface AppHost {
  readonly port: number;
  /** Drops this instance's cached copy of an app (the apps events do it on every instance: app-changes.ts). */
  invalidate(address: string): void;
  /** Writes the opens and viewers counted so far (tests; stop does it too). */
  flushStats(): Promise<void>;
  /** Writes the server code log lines buffered so far (tool_logs flushes ctx.appLogs itself; stop does it too). */
  flushLogs(): Promise<void>;
  stop(): Promise<void>;
}

/** Upload tokens are random bytes, base64url (publish/folder-upload.ts), then a manifest file's path or nothing. */
const UPLOAD_PATH = /^\/_hatch\/uploads\/([A-Za-z0-9_-]{16,64})(?:\/(.+))?$/;
/** Host values whose site is remembered at most (then the memory starts over). */
const MAX_HOSTS_KEPT = 1_000;
/** A DNS name is at most 253 characters; with a port and a dot this is the longest Host worth reading. */
/**
 * The request's path and query on a fixed origin. `request.url` is built from the Host header, which need not make
 * a URL at all (`x.localhost:3001.`); the Host was checked already (no `/`, `?` or `#` in it), so the path starts at
 * the first slash after the scheme. Null when even that is no URL.
 */
function requestTarget(request: Request): URL | null {
  try {
    return new URL(`http://app.invalid${pathAndQueryOf(request.url) ?? "/"}`);
  } catch {
    return null;
  }
}

/** What follows the host in a request's URL (from its first slash after the scheme), or null when there is none. */
function pathAndQueryOf(raw: string): string | null {
  const scheme = raw.indexOf("://");
  const slash = scheme < 0 ? -1 : raw.indexOf("/", scheme + 3);
  return slash < 0 ? null : raw.slice(slash);
}

/** What the file routes read of a request's target. */
type Target = Pick<URL, "pathname" | "search">;

/** Segments of letters, digits and `._~-`, none of them `.` or `..`: a path URL would keep exactly as it is. */
const PLAIN_PATH = /^(?:\/(?!\.\.?(?:\/|$))[A-Za-z0-9._~-]*)+$/;

/**
 * The target of a request for an app's file when it is plain (PLAIN_PATH, no query or fragment) and not one of
 * Hatch's own paths (`/_hatch/`, `/api`): the same pathname `new URL` would give, without parsing one (most of a
 * site's requests). Null otherwise: the caller parses the target (requestTarget).
 */
export function plainFileTarget(raw: string): Target | null {
  const path = pathAndQueryOf(raw);
  if (
    path === null ||
    !PLAIN_PATH.test(path) ||
    path.startsWith("/_hatch/") ||
    path === "/api" ||
    path.startsWith("/api/")
  )
    return null;
  return { pathname: path, search: "" };
}

/** The app host: serves published apps on their own origins, and upload URLs on the bare apps domain. */
export function startAppHost(ctx: AppsContext, options: AppHostOptions = {}): AppHost {
  const log = ctx.logger.child({ component: "app-host" });
  const cache = new AppCache((address) => loadHostedApp(ctx.db, address), { ttlMs: options.cacheTtlMs });
  const blobs = new BlobCache(ctx.blobs);
  const stats = new StatsCounter(ctx.db, ctx.keys.stats, log, { flushEveryMs: options.statsFlushMs });
  const cookieName = viewerCookieName(ctx.config);
  const viewers = new LiveViewers(ctx.bus, ctx.keys.viewer, { ttlMs: options.viewerTtlMs });
  const live = new LiveChanges(ctx.bus, log, { pingMs: options.livePingMs });
  const customHosts = CustomHosts.overBus(ctx.bus, { ttlMs: options.hostTtlMs });
  const listener = options.listener ?? listenAppHost(ctx.config);
  const server = listener.server;
  const gate = createCallerGate({
    rate: ctx.rate,
    config: ctx.config,
    log,
    loadApp: (address) => cache.get(address),
    caller: { config: ctx.config, viewerKey: ctx.keys.viewer, cookieName, viewers },
  });
  const outbound = options.outbound ?? createOutbound(ctx);
  const data = createDataRoutes({
    ctx,
    log,
    live,
    recheck: gate.recheck,
    // Bun closes a connection idle for 10 s; an event stream is idle between pings.
    keepOpen: (request) => server.timeout(request, 0),
  });
  const serverCode = createServerCode(
    ctx,
    log.child({ component: "server-code" }),
    { data, outbound },
    options.serverCode,
  );
  const hatch = createHatchRoutes({ config: ctx.config, gate, data, outbound, serverCode });
  const preview = createPreviewRoute({ ctx, log, viewers, blobs, loadApp: (address) => cache.get(address) });

  // Which site each Host value names, remembered (a handful of values in practice; a flood of made-up ones only
  // empties the map now and then): the hot path then parses no Host.
  const hostAddresses = new Map<string, string | null>();
  function addressOf(host: string | null): string | null {
    if (host === null) return null;
    let address = hostAddresses.get(host);
    if (address === undefined) {
      address = addressOfHost(host, ctx.config.appsDomain);
      if (hostAddresses.size >= MAX_HOSTS_KEPT) hostAddresses.clear();
      hostAddresses.set(host, address);
    }
    return address;
  }

  // Synchronous whenever the app, the viewer and the file's bytes are cached: a served file then costs no promise.
  function handle(request: Request, server: Server<undefined>): Response | Promise<Response> {
    const host = request.headers.get("host");
    const address = addressOf(host);
    if (address === null) {
      const preview = previewOfHost(host, ctx.config.appsDomain);
      if (preview) return answerPreview(request, preview);
      return answerCustomHost(request, server);
    }
    if (address !== "") {
      const plain = plainFileTarget(request.url);
      if (plain) return answerFiles(request, server, plain, address);
    }
    const url = requestTarget(request);
    if (!url) return pages.badRequest();
    if (address === "") return answerRoot(request, url);
    return route(request, server, url, address);
  }

  /** `v<N>--<address>.<apps domain>`: a non-current version, for its owner only (preview.ts). */
  function answerPreview(request: Request, which: Preview): Response | Promise<Response> {
    const url = requestTarget(request);
    return url ? preview(request, url, which) : pages.badRequest();
  }

  /**
   * A Host outside the apps domain: the app the domains service says it serves (a verified custom domain, or
   * `<address>.<company domain>` for that company's apps only). A public app is served there like on its own address.
   * Any other app is sent to its own address: sign-in and the viewer cookie belong to that origin.
   */
  function answerCustomHost(request: Request, server: Server<undefined>): Response | Promise<Response> {
    const hostname = hostnameOfHost(request.headers.get("host"));
    if (hostname === null) return pages.unknownHost();
    const url = requestTarget(request);
    if (!url) return pages.badRequest();
    const serve = (resolved: HostResolved): Response | Promise<Response> => {
      const address = resolved.address;
      if (!address) return pages.unknownHost();
      const pick = (app: HostedApp | null): Response | Promise<Response> => {
        if (!app || app.accountId !== resolved.accountId) return pages.unknownHost();
        if (app.visibility !== "public" || url.pathname === "/_hatch/auth") {
          return new Response(null, {
            status: 302,
            headers: {
              Location: `${appOrigin(ctx.config, address)}${url.pathname}${url.search}`,
              "Cache-Control": "no-store",
            },
          });
        }
        return route(request, server, url, address);
      };
      const cached = cache.get(address);
      return cached instanceof Promise ? cached.then(pick) : pick(cached);
    };
    const unavailable = (error: unknown): Response => {
      log.warn("custom hostname could not be resolved", { hostname, code: isToolError(error) ? error.code : "error" });
      return pages.unavailable();
    };
    try {
      const resolved = customHosts.get(hostname);
      return resolved instanceof Promise ? resolved.then(serve, unavailable) : serve(resolved);
    } catch (error) {
      return unavailable(error);
    }
  }

  /** An app's routes, whichever host named it. */
  function route(request: Request, server: Server<undefined>, url: URL, address: string): Response | Promise<Response> {
    if (url.pathname === "/_hatch/auth") {
      // The sign-in's way back to the app (auth-return.ts): a page like the app's files.
      if (request.method !== "GET" && request.method !== "HEAD") return pages.methodNotAllowed();
      return answerAuthReturn(ctx, url, address);
    }
    if (url.pathname.startsWith("/_hatch/")) {
      // Hatch's own routes on every app origin: the browser library and the app's data (any method).
      return hatch(request, url, address, server.requestIP(request)?.address ?? "");
    }
    if (url.pathname === "/api" || url.pathname.startsWith("/api/")) {
      // An app with server code answers /api itself, any method; without, these are paths of its files.
      const ip = server.requestIP(request)?.address ?? "";
      const pick = (app: HostedApp | null) =>
        app?.site?.server ? hatch.serverCode(request, url, address, ip) : answerFiles(request, server, url, address);
      const cached = cache.get(address);
      return cached instanceof Promise
        ? cached.then(
            pick,
            (error: unknown) => (log.error("app could not be loaded", { address, error }), pages.unavailable()),
          )
        : pick(cached);
    }
    return answerFiles(request, server, url, address);
  }

  function answerFiles(
    request: Request,
    server: Server<undefined>,
    url: Target,
    address: string,
  ): Response | Promise<Response> {
    if (request.method !== "GET" && request.method !== "HEAD") return pages.methodNotAllowed();
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

  function answerApp(
    request: Request,
    server: Server<undefined>,
    url: Target,
    app: HostedApp,
  ): Response | Promise<Response> {
    if (app.visibility === "public") return serveApp(request, server, url, app, null);
    const back = url.pathname + url.search;
    const session = readViewerSession(request, ctx.keys.viewer, cookieName, app.address);
    const toSignIn = (clear: boolean): Response => {
      const headers: Record<string, string> = {
        Location: signInUrl(ctx.config.gatewayUrl, app.address, back),
        "Cache-Control": "no-store",
      };
      if (clear) headers["Set-Cookie"] = clearedViewerCookie(ctx.config);
      return new Response(null, { status: 302, headers });
    };
    if (!session) return toSignIn(false);
    const decide = (viewer: Viewer | null): Response | Promise<Response> => {
      // The Hatch session behind the cookie ended (sign-out) or is no longer this person's: sign in again.
      if (!viewer) return toSignIn(true);
      if (!canView(app, viewer))
        return viewer.emailVerified === true || app.visibility !== "people"
          ? pages.forbidden(viewer.email, signInUrl(ctx.config.gatewayUrl, app.address, back, true))
          : pages.unverified(viewer.email, `${ctx.config.gatewayUrl}/verify-email`);
      return serveApp(request, server, url, app, viewer);
    };
    let live: ReturnType<LiveViewers["check"]>;
    try {
      live = viewers.check(session);
    } catch (error) {
      return unknownViewer(app, error);
    }
    return live instanceof Promise ? live.then(decide, (error: unknown) => unknownViewer(app, error)) : decide(live);
  }

  /** Nobody could say who the viewer is (gateway or bus down): a non-public app is refused, never shown on trust. */
  function unknownViewer(app: HostedApp, error: unknown): Response {
    log.warn("viewer could not be checked", { address: app.address, code: isToolError(error) ? error.code : "error" });
    return pages.viewerUnknown();
  }

  function serveApp(
    request: Request,
    server: Server<undefined>,
    url: Target,
    app: HostedApp,
    viewer: Viewer | null,
  ): Response | Promise<Response> {
    const isPublic = app.visibility === "public";
    if (app.paused) return pages.paused();
    if (!app.site) return pages.nothingPublished();
    const path = storedPathOf(url.pathname);
    // The server module's source is the owner's, not a file of the site.
    if (path === null || path === app.site.server?.path) return pages.notFound();
    const finish = (served: Served): Response => {
      if (served.document && request.method === "GET" && isNavigation(request)) {
        // A public app's viewer is counted by the cookie's user, unchecked: only statistics, and no bus call.
        const sub =
          viewer?.sub ??
          (isPublic ? readViewerSession(request, ctx.keys.viewer, cookieName, app.address)?.sub : undefined);
        stats.count(app.id, whoIsViewing(request, server, sub ?? null));
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
      return options.uploads(request, upload[1]!, upload[2]);
    }
    return pages.root(appOrigin(ctx.config, "my-app"));
  }

  function whoIsViewing(request: Request, server: Server<undefined>, sub: string | null): string {
    if (sub) return `u:${sub}`;
    // The connection's address only when no trusted proxy named the client (requestIP costs an object a request).
    const forwarded = ctx.config.trustProxy ? clientAddressOf(request, true, undefined) : "";
    const ip = forwarded || (server.requestIP(request)?.address ?? "");
    return `a:${ip}\n${request.headers.get("user-agent") ?? ""}`;
  }

  /** hatch_app_host_requests_total by status class, and the time to the response headers. */
  const counted = (response: Response, started: number): Response => {
    metrics.appHostRequests.inc(statusClass(response.status));
    metrics.appHostSeconds.observe((performance.now() - started) / 1000);
    return response;
  };
  const failed = (error: unknown): Response => {
    log.error("app host request failed", { error });
    return pages.failed();
  };
  listener.route((request, server) => {
    const started = performance.now();
    try {
      const response = handle(request, server);
      return response instanceof Promise
        ? response.catch(failed).then((r) => counted(r, started))
        : counted(response, started);
    } catch (error) {
      return counted(failed(error), started);
    }
  });
  const subscription = followAppEvents(ctx.bus, log, (address) => cache.invalidate(address));
  const hostChanges = customHosts.listen(ctx.bus, log);
  const viewerChanges = viewers.listen(log);
  const dataChanges = live.listen();

  return {
    port: listener.port,
    invalidate: (address) => cache.invalidate(address),
    flushStats: () => stats.flush(),
    flushLogs: () => ctx.appLogs.flush(),
    async stop() {
      // Stop listening first, then end the data-change streams (held open by pages), so requests in flight can finish.
      const inFlight = server.stop(false);
      subscription.unsubscribe();
      hostChanges.unsubscribe();
      viewerChanges.unsubscribe();
      dataChanges.unsubscribe();
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([inFlight, new Promise((resolve) => (timer = setTimeout(resolve, IN_FLIGHT_WAIT_MS)))]);
      clearTimeout(timer);
      await server.stop(true);
      await stats.stop();
      await serverCode.stop();
    },
  };
}

/** The app host's socket, listening before the apps context exists (with APP_PORT 0 its port makes the app origins). */
export interface AppHostListener {
  readonly port: number;
  readonly server: Server<undefined>;
  /** Gives the socket its handler; until then every request answers 503. */
  route(fetch: (request: Request, server: Server<undefined>) => Response | Promise<Response>): void;
}

export function listenAppHost(config: Pick<AppsConfig, "appPort" | "appHostname">): AppHostListener {
  let handler: ((request: Request, server: Server<undefined>) => Response | Promise<Response>) | null = null;
  const server = Bun.serve({
    port: config.appPort,
    hostname: config.appHostname,
    reusePort: false,
    // A folder's tar is the largest body (routes that take bodies cap their own); Bun's default is 128 MB.
    maxRequestBodySize: TAR_MAX_BYTES + 1024 * 1024,
    idleTimeout: IDLE_TIMEOUT_SECONDS,
    fetch: (request, server) => (handler ? handler(request, server) : pages.unavailable()),
  });
  return {
    port: server.port ?? config.appPort,
    server,
    route(fetch) {
      handler = fetch;
    },
  };
}

/** How long the host's stop waits for requests in flight before closing their connections (a process's shutdown bounds the whole). */
const IN_FLIGHT_WAIT_MS = 3_000;

/**
 * Seconds a connection may stay silent before Bun closes it (Bun's default is 10 s): past the longest a request may
 * take before it is answered (an AI call waits up to a minute for the provider, server code 30 s). Live data streams
 * send their own pings.
 */
const IDLE_TIMEOUT_SECONDS =
  Math.max(AI_LIMITS.timeoutSeconds, SERVER_LIMITS.requestSeconds, SERVER_LIMITS.apiTimeoutSeconds) + 30;

/** A page load in a window or frame; fetch() and XHR of an HTML file send another Sec-Fetch-Dest (old browsers send none). */
function isNavigation(request: Request): boolean {
  const dest = request.headers.get("sec-fetch-dest");
  return dest === null || dest === "document" || dest === "iframe" || dest === "frame";
}
