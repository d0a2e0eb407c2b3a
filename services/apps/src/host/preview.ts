import { isToolError, previewAudience } from "@hatch/contracts";
import type { Logger } from "@hatch/platform";
import type { AppsContext } from "../context.ts";
import { storedPathOf } from "../http/paths.ts";
import { loadSite, type HostedApp } from "../http/site.ts";
import { clearedViewerCookie, previewCookieName, readViewerSession, signInUrl, type Viewer } from "../http/viewer.ts";
import type { LiveViewers } from "../http/viewers.ts";
import { answerAuthReturn } from "./auth-return.ts";
import type { BlobCache } from "./blob-cache.ts";
import { pages } from "./pages.ts";
import type { Preview } from "./host-names.ts";
import { serveSite } from "./serve.ts";

// A non-current version's preview, on its own origin `v<N>--<address>.<apps domain>` (SCHEMA.md; host-names.ts reads
// the Host): only the owner, checked live on every request, through the usual viewer ticket and a cookie of its own
// bound to that exact host; anyone else gets the 404 page of a missing app. Only the version's files are served (no
// data, files, server code, AI or declared APIs: 403), never cached or indexed, never counted.

export interface PreviewDeps {
  ctx: AppsContext;
  log: Logger;
  viewers: LiveViewers;
  blobs: BlobCache;
  loadApp(address: string): HostedApp | null | Promise<HostedApp | null>;
}

export function createPreviewRoute(
  deps: PreviewDeps,
): (request: Request, url: URL, preview: Preview) => Promise<Response> {
  const { ctx, log } = deps;
  const cookieName = previewCookieName(ctx.config);

  async function answer(request: Request, url: URL, { address, version }: Preview): Promise<Response> {
    const path = url.pathname;
    if (path === "/_hatch/auth") {
      if (request.method !== "GET" && request.method !== "HEAD") return pages.methodNotAllowed();
      return answerAuthReturn(ctx, url, address, version);
    }
    if (path.startsWith("/_hatch/") || path === "/api" || path.startsWith("/api/")) return pages.previewOnly();
    if (request.method !== "GET" && request.method !== "HEAD") return pages.methodNotAllowed();
    const toSignIn = (clear: boolean): Response => {
      const headers: Record<string, string> = {
        Location: signInUrl(ctx.config.gatewayUrl, address, path + url.search, false, version),
        "Cache-Control": "no-store",
      };
      if (clear) headers["Set-Cookie"] = clearedViewerCookie(ctx.config, cookieName);
      return new Response(null, { status: 302, headers });
    };
    const session = readViewerSession(request, ctx.keys.viewer, cookieName, previewAudience(address, version));
    if (!session) return toSignIn(false);
    let viewer: Viewer | null;
    try {
      viewer = await deps.viewers.check(session);
    } catch (error) {
      log.warn("viewer could not be checked", { address, code: isToolError(error) ? error.code : "error" });
      return pages.viewerUnknown();
    }
    if (!viewer) return toSignIn(true);
    const app = await deps.loadApp(address);
    // The owner only, as they are now; anyone else learns nothing, not even that the app or the version exists.
    if (!app || viewer.sub !== app.ownerId) return pages.noApp(address);
    const site = await loadSite(ctx.db, app.id, version, false);
    if (!site) return pages.noApp(address);
    const stored = storedPathOf(path);
    if (stored === null || stored === site.server?.path) return pages.notFound();
    const served = await serveSite(deps.blobs, log, request, site, stored, false);
    return served.response;
  }

  return async (request, url, preview) => {
    const response = await answer(request, url, preview);
    // Never kept by a cache or a search engine: the answer depends on who asks, and an old version is no page of the app.
    const headers = new Headers(response.headers);
    headers.set("Cache-Control", "no-store");
    headers.set("X-Robots-Tag", "noindex");
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  };
}
