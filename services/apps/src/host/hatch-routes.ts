import { answerAiChat } from "../ai/chat-http.ts";
import { answerApi, HATCH_ERROR_HEADER } from "../apis/route.ts";
import { answerClientFile } from "../client/serve.ts";
import { appOrigin, type AppsConfig } from "../config.ts";
import type { DataRoutes } from "../data/routes.ts";
import { DataError, dataErrorResponse, json, methodNotAllowed } from "../http/answers.ts";
import type { CallerGate } from "../http/caller.ts";
import type { Outbound } from "../http/outbound.ts";
import { sameOriginTarget } from "../http/paths.ts";
import { signInUrl } from "../http/viewer.ts";
import type { ServerCode } from "../server-code/route.ts";

// Hatch's own routes on every app origin, under /_hatch/ (an app's files never answer there), and /api of an app
// with server code: this file only routes. The browser library and sign-in are answered here; everything that acts
// for a viewer goes through the caller gate (http/caller.ts), then to its route family: data (data/routes.ts),
// outbound calls (apis/route.ts, ai/chat-http.ts), server code (server-code/route.ts). `/_hatch/auth` (the end of
// sign-in) is answered by server.ts.

export interface HatchRouter {
  config: Pick<AppsConfig, "appsProtocol" | "appsDomain" | "gatewayUrl">;
  gate: CallerGate;
  data: DataRoutes;
  outbound: Outbound;
  /** The app's server code behind /api (absent: no app has server code here). */
  serverCode?: ServerCode;
}

export interface HatchRoutes {
  /** Answers a path under /_hatch/ on an app's origin (any method). */
  (request: Request, url: URL, address: string, remoteAddress: string): Response | Promise<Response>;
  /** `/api` and `/api/…` of an app whose current version has server code (any method): the caller's checks first. */
  serverCode(request: Request, url: URL, address: string, remoteAddress: string): Promise<Response>;
}

/** How long a document request may take before the page is told to check and try again (the database is restarting). */
const DOCUMENT_ANSWER_MS = 10_000;

export function createHatchRoutes(router: HatchRouter): HatchRoutes {
  const { config, gate } = router;

  function answerHatch(request: Request, url: URL, address: string, remoteAddress: string) {
    const path = url.pathname;
    if (path.startsWith("/_hatch/client.")) return answerClientFile(request, path.slice("/_hatch/".length));
    if (path === "/_hatch/signin") {
      // hatch.signIn(): through the gateway's sign-in and back to the page (only ever a path on this origin).
      const origin = appOrigin(config, address);
      const back = sameOriginTarget(url.searchParams.get("path"), origin).slice(origin.length);
      return new Response(null, {
        status: 302,
        headers: { Location: signInUrl(config.gatewayUrl, address, back), "Cache-Control": "no-store" },
      });
    }
    if (path === "/_hatch/me") {
      if (request.method !== "GET") return methodNotAllowed("GET");
      return gate.withCaller(request, address, remoteAddress, ({ viewer }) =>
        json(viewer ? { email: viewer.email, name: viewer.name ?? null } : null),
      );
    }
    if (path.startsWith("/_hatch/api/")) {
      const rest = path.slice("/_hatch/api/".length);
      return gate.withCaller(
        request,
        address,
        remoteAddress,
        (caller) => answerApi(router.outbound, config, request, url, rest, caller),
        { markedWith: HATCH_ERROR_HEADER },
      );
    }
    if (path === "/_hatch/ai/chat")
      return gate.withCaller(request, address, remoteAddress, (caller) =>
        answerAiChat(request, caller, config, router.outbound),
      );
    if (path.startsWith("/_hatch/db/")) {
      const rest = path.slice("/_hatch/db/".length);
      // Documents are small: their whole answer, the app's lookup included, has a deadline (a restarting database
      // must not hold the page).
      return gate.withCaller(
        request,
        address,
        remoteAddress,
        (caller) => router.data.answer("db", request, url, rest, caller),
        { deadlineMs: DOCUMENT_ANSWER_MS },
      );
    }
    if (path.startsWith("/_hatch/files/")) {
      const rest = path.slice("/_hatch/files/".length);
      // Files are not bounded here, since an upload's own transfer may take long.
      return gate.withCaller(request, address, remoteAddress, (caller) =>
        router.data.answer("files", request, url, rest, caller),
      );
    }
    return dataErrorResponse(
      new DataError("not_found", "Hatch has nothing at this /_hatch/ path. See service_docs, topic browser_library."),
    );
  }

  function answerServerCode(request: Request, url: URL, address: string, remoteAddress: string): Promise<Response> {
    return gate.withCaller(request, address, remoteAddress, (caller) => {
      if (!router.serverCode || !caller.app.site?.server)
        throw new DataError("not_found", "This app has no server code.");
      return router.serverCode.answer(request, url, caller);
    });
  }

  return Object.assign(answerHatch, { serverCode: answerServerCode });
}
