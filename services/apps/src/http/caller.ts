import { addressKey, clientAddressOf, type Logger, type RateCounter, withDeadline } from "@hatch/platform";
import { appOrigin, type AppsConfig } from "../config.ts";
import { answerFailure, DataError } from "./answers.ts";
import type { HostedApp } from "./site.ts";
import { canView, needsConsent, readViewerSession, type Viewer } from "./viewer.ts";
import type { LiveViewers } from "./viewers.ts";

// Who is asking, for every route on an app's origin that acts for a viewer (`/_hatch/me`, data, server code, outbound
// calls): the viewer the app host verified with the gateway (never anything the page sends), whether they may open
// the app at all, whether the request comes from the app's own pages, and how many requests they made.

/** Who makes a data request to one app: the verified viewer (null when not signed in) and a key for rate limits. */
export interface DataCaller {
  app: HostedApp;
  viewer: Viewer | null;
  /** `<app id> u:<user id>` or `<app id> a:<address>`: whose requests to this app count together. */
  rateKey: string;
}

export interface CallerDeps {
  config: Pick<AppsConfig, "trustProxy">;
  viewerKey: Buffer;
  cookieName: string;
  viewers: LiveViewers;
}

/**
 * The verified viewer of a data request. A cookie is checked with the gateway for public apps too (a rule like
 * `signed_in` needs to know); a cookie whose session ended counts as no viewer, and so does a person who has not
 * agreed that this public app learns who they are (or took it back on the dashboard; see needsConsent). Refuses with `forbidden` whoever
 * may not open the app, and with `unavailable` a paused app (only to those who may open it, as its pages do: a
 * stranger learns nothing about a non-public app).
 */
export async function dataCaller(
  deps: CallerDeps,
  request: Request,
  app: HostedApp,
  remoteAddress: string,
): Promise<DataCaller> {
  const session = readViewerSession(request, deps.viewerKey, deps.cookieName, app.address);
  // A public app's question names the app, so the answer says whether this person agreed that it learns who they are.
  const checked = session
    ? await deps.viewers.check(session, app.visibility === "public" ? { id: app.id, owner: app.ownerId } : undefined)
    : null;
  const viewer = checked && needsConsent(app, checked) && checked.consent !== true ? null : checked;
  if (!canView(app, viewer)) {
    throw new DataError(
      "forbidden",
      viewer
        ? `You are signed in as ${viewer.email}, and this app is not shared with that account.`
        : "Sign in to use this app (hatch.signIn()).",
    );
  }
  if (app.paused)
    throw new DataError("unavailable", "This app is paused by its organization, so its data cannot be used right now.");
  const address = clientAddressOf(request, deps.config.trustProxy, remoteAddress);
  return {
    app,
    viewer,
    rateKey: `${app.id} ${viewer ? `u:${viewer.sub}` : `a:${addressKey(address.slice(0, 64))}`}`,
  };
}

/**
 * A change must come from the app's own pages: a page of another app (a sibling subdomain shares the site, so the
 * viewer cookie goes along) or any other origin is refused. Requests without Origin and Sec-Fetch-Site headers are
 * not from a browser page and carry no one else's cookie.
 */
export function checkSameOrigin(
  request: Request,
  config: Pick<AppsConfig, "appsProtocol" | "appsDomain">,
  address: string,
): void {
  const site = request.headers.get("sec-fetch-site");
  const origin = request.headers.get("origin");
  if (
    (site !== null && site !== "same-origin") ||
    (origin !== null && !isOwnOrigin(request, origin, appOrigin(config, address)))
  ) {
    throw new DataError("forbidden", "Data of this app can only be changed from the app's own pages.");
  }
}

/**
 * A browser's Origin names the app's own page: its default origin, or the host the request was sent to (a custom
 * domain the app host resolved to this very app; a page elsewhere cannot make a browser send another Origin).
 */
export function isOwnOrigin(request: Request, origin: string, defaultOrigin: string): boolean {
  if (origin === defaultOrigin) return true;
  const host = request.headers.get("host");
  return host !== null && URL.canParse(origin) && new URL(origin).host === host.toLowerCase();
}

/** How long a request waits for the shared count before it goes on uncounted (NATS restarting). */
const SHARED_COUNT_MS = 1_500;

export interface ViewerRateLimitOptions {
  /** Requests one key may make in a minute. */
  perMinute: number;
  /** What is counted (`data`, `ai`): keys of different limits never share a count. */
  scope: string;
  log: Logger;
  /** The refusal's message, given the seconds to wait; default "Too many requests: at most … a minute …". */
  refusal?: (waitSeconds: number) => string;
}

/**
 * Requests per caller per minute, each caller's minute running from their first request, counted by the apps rate
 * counter (AppsContext.rate: JetStream key-value on NATS, so every app host copy holds one limit; memory in
 * `bun run dev`). Past the limit: DataError limit_exceeded with Retry-After. When the counter cannot answer in a moment
 * the request goes on uncounted (a limit is not worth an outage) and the log says so.
 */
export class ViewerRateLimit {
  constructor(
    private readonly counter: RateCounter,
    private readonly options: ViewerRateLimitOptions,
  ) {}

  async take(key: string): Promise<void> {
    const { perMinute, scope, log } = this.options;
    let decision: { allowed: boolean; retryAfterSeconds: number };
    try {
      decision = await withDeadline(
        this.counter.take(`${scope}:${key}`, perMinute, 60_000),
        SHARED_COUNT_MS,
        () => new Error(`the rate counter did not answer in ${SHARED_COUNT_MS} ms`),
      );
    } catch (error) {
      log.warn("request rate not counted", { scope, error });
      return;
    }
    if (decision.allowed) return;
    const wait = decision.retryAfterSeconds;
    throw new DataError(
      "limit_exceeded",
      this.options.refusal?.(wait) ?? `Too many requests: at most ${perMinute} a minute. Try again in ${wait} s.`,
      { "Retry-After": String(wait) },
    );
  }
}

export interface CallerGateDeps {
  /** The apps rate counter (windows from a caller's first request). */
  rate: RateCounter;
  config: Pick<AppsConfig, "trustProxy" | "dataRequestsPerMinute">;
  log: Logger;
  /** The app at an address, from the app host's cache; null when there is none. */
  loadApp(address: string): HostedApp | null | Promise<HostedApp | null>;
  caller: CallerDeps;
}

export interface CallerOptions {
  /** Hatch's own failures carry this header (routes whose answers are otherwise someone else's: /_hatch/api/). */
  markedWith?: string;
  /** The whole answer, the app's and the viewer's lookups included, within it (documentTooLate after). */
  deadlineMs?: number;
}

export interface CallerGate {
  /**
   * Answers a request of an app's origin that acts for its viewer: loads the app, verifies the caller (dataCaller),
   * counts the request against the data rate limit, then `answer`; any failure becomes its JSON refusal.
   */
  withCaller(
    request: Request,
    address: string,
    remoteAddress: string,
    answer: (caller: DataCaller) => Response | Promise<Response>,
    options?: CallerOptions,
  ): Promise<Response>;
  /** The caller of a request again, on the app's current copy; null when the app at that address is another or gone. */
  recheck(request: Request, caller: DataCaller): Promise<DataCaller | null>;
}

export function createCallerGate(deps: CallerGateDeps): CallerGate {
  const { config, log } = deps;
  const limiter = new ViewerRateLimit(deps.rate, { perMinute: config.dataRequestsPerMinute, scope: "data", log });
  return {
    async withCaller(request, address, remoteAddress, answer, options = {}) {
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
        const failure = answerFailure(error, log, "data request", request.method);
        if (options.markedWith)
          failure.headers.set(options.markedWith, error instanceof DataError ? error.code : "unavailable");
        return failure;
      }
    },
    async recheck(request, caller) {
      const app = await deps.loadApp(caller.app.address);
      if (!app || app.id !== caller.app.id) return null;
      return dataCaller(deps.caller, request, app, "");
    },
  };
}

/** A document request past its deadline: the write may still land, so the page is told to check. */
export function documentTooLate(): DataError {
  return new DataError(
    "unavailable",
    "Hatch's database did not answer in time, so this may or may not have taken effect. Check, then try again in a moment.",
    { "Retry-After": "5" },
  );
}
