import { createRateCounter, isNatsBus, withDeadline, type Logger } from "@hatch/platform";
import { appOrigin } from "../config.ts";
import type { AppsContext } from "../context.ts";
import {
  answerFailure,
  dataCaller,
  DataError,
  dataErrorResponse,
  json,
  RateLimiter,
  SharedRateLimiter,
  type DataRateLimiter,
  type CallerDeps,
  type DataCaller,
} from "../data/access.ts";
import { answerBuckets } from "../data/buckets-http.ts";
import { answerCollections } from "../data/collections-http.ts";
import type { LiveChanges } from "../data/live.ts";
import { answerApi, HATCH_ERROR_HEADER } from "../apis/route.ts";
import { answerClientFile } from "../client/serve.ts";
import { answerAiChat } from "../ai/chat-http.ts";
import { signInUrl } from "./access.ts";
import { sameOriginTarget } from "./paths.ts";
import type { Outbound } from "./outbound.ts";
import type { ServerCode } from "../server-code/route.ts";
import type { HostedApp } from "./site.ts";

// Hatch's own routes on every app origin, under /_hatch/ (an app's files never answer there): the browser library,
// who the viewer is, sign-in, and the app's data. `/_hatch/auth` (the end of sign-in) is answered by server.ts.

export interface HatchRouteDeps {
  ctx: AppsContext;
  log: Logger;
  /** The app at an address, from the app host's cache; null when there is none. */
  loadApp(address: string): HostedApp | null | Promise<HostedApp | null>;
  caller: CallerDeps;
  live: LiveChanges;
  /** Declared API calls and AI calls (/_hatch/api/…, /_hatch/ai/chat, and server code's env.api / env.ai). */
  outbound: Outbound;
  /** The app's server code behind /api (absent: no app has server code here). */
  serverCode?: ServerCode;
  /** Lifts the server's idle timeout for a request whose answer stays open (an event stream with pings). */
  keepOpen?(request: Request): void;
}

/** One data request, with everything a route needs. `rest` is the path after `/_hatch/db/` or `/_hatch/files/`. */
export interface DataRequest {
  request: Request;
  url: URL;
  rest: string;
  caller: DataCaller;
  deps: HatchRouteDeps;
}

export function createHatchRoutes(deps: HatchRouteDeps) {
  const { bus, config, logger } = deps.ctx;
  const limiter: DataRateLimiter = isNatsBus(bus)
    ? new SharedRateLimiter(createRateCounter(bus, 2 * 60_000, "apps", logger), config.dataRequestsPerMinute, logger)
    : new RateLimiter(config.dataRequestsPerMinute);

  /**
   * `marked`: Hatch's own failures carry HATCH_ERROR_HEADER (routes whose answers are otherwise someone else's).
   * `deadlineMs`: the whole answer, the app's and the viewer's lookups included, within it (documentTooLate after).
   */
  async function withCaller(
    request: Request,
    url: URL,
    address: string,
    remoteAddress: string,
    answer: (caller: DataCaller) => Response | Promise<Response>,
    options: { marked?: boolean; deadlineMs?: number } = {},
  ): Promise<Response> {
    const run = async () => {
      const app = await deps.loadApp(address);
      if (!app) throw new DataError("not_found", `There is no app called "${address}".`);
      const caller = await dataCaller(deps.caller, request, app, remoteAddress);
      await limiter.take(caller.rateKey);
      return await answer(caller);
    };
    try {
      return await (options.deadlineMs ? withDeadline(run(), options.deadlineMs, documentTooLate) : run());
    } catch (error) {
      const failure = answerFailure(error, deps.log, "data request", request.method);
      if (options.marked)
        failure.headers.set(HATCH_ERROR_HEADER, error instanceof DataError ? error.code : "unavailable");
      return failure;
    }
  }

  /** `/api` and `/api/…` of an app whose current version has server code (any method): the data routes' checks first. */
  function answerServerCode(request: Request, url: URL, address: string, remoteAddress: string): Promise<Response> {
    return withCaller(request, url, address, remoteAddress, (caller) => {
      if (!deps.serverCode || !caller.app.site?.server)
        throw new DataError("not_found", "This app has no server code.");
      return deps.serverCode.answer(request, url, caller, deps);
    });
  }

  /** Answers a path under /_hatch/ on an app's origin (any method). */
  return Object.assign(
    function answerHatch(
      request: Request,
      url: URL,
      address: string,
      remoteAddress: string,
    ): Response | Promise<Response> {
      const path = url.pathname;
      if (path.startsWith("/_hatch/client.")) return answerClientFile(request, path.slice("/_hatch/".length));
      if (path === "/_hatch/signin") {
        // hatch.signIn(): through the gateway's sign-in and back to the page (only ever a path on this origin).
        const origin = appOrigin(deps.ctx.config, address);
        const back = sameOriginTarget(url.searchParams.get("path"), origin).slice(origin.length);
        return new Response(null, {
          status: 302,
          headers: { Location: signInUrl(deps.ctx.config.gatewayUrl, address, back), "Cache-Control": "no-store" },
        });
      }
      if (path === "/_hatch/me") {
        if (request.method !== "GET") return methodNotAllowed("GET");
        return withCaller(request, url, address, remoteAddress, ({ viewer }) =>
          json(viewer ? { email: viewer.email, name: viewer.name ?? null } : null),
        );
      }
      if (path.startsWith("/_hatch/api/")) {
        const rest = path.slice("/_hatch/api/".length);
        return withCaller(
          request,
          url,
          address,
          remoteAddress,
          (caller) => answerApi(deps.outbound, deps.ctx.config, request, url, rest, caller),
          { marked: true },
        );
      }
      if (path === "/_hatch/ai/chat")
        return withCaller(request, url, address, remoteAddress, (caller) => answerAiChat(request, caller, deps));
      for (const [prefix, answer] of [
        ["/_hatch/db/", answerCollections],
        ["/_hatch/files/", answerBuckets],
      ] as const) {
        if (path.startsWith(prefix)) {
          const rest = path.slice(prefix.length);
          // Documents are small: their whole answer, the app's lookup included, has a deadline (a restarting database
          // must not hold the page). Files are not bounded here, since an upload's own transfer may take long.
          return withCaller(
            request,
            url,
            address,
            remoteAddress,
            (caller) => answer({ request, url, rest, caller, deps }),
            {
              deadlineMs: prefix === "/_hatch/db/" ? DOCUMENT_ANSWER_MS : undefined,
            },
          );
        }
      }
      return dataErrorResponse(
        new DataError("not_found", "Hatch has nothing at this /_hatch/ path. See service_docs, topic browser_library."),
      );
    },
    { serverCode: answerServerCode },
  );
}

export function methodNotAllowed(allowed: string): Response {
  return json({ error: { code: "invalid", message: `This address answers ${allowed} only.` } }, 405, {
    Allow: allowed,
  });
}

/** How long a document request may take before the page is told to check and try again (the database is restarting). */
const DOCUMENT_ANSWER_MS = 10_000;

/** A document request past its deadline: the write may still land, so the page is told to check. */
export function documentTooLate(): DataError {
  return new DataError(
    "unavailable",
    "Hatch's database did not answer in time, so this may or may not have taken effect. Check, then try again in a moment.",
    { "Retry-After": "5" },
  );
}
