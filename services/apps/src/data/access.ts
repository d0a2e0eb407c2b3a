import {
  addressKey,
  clientAddressOf,
  databaseUnavailableMessage,
  isDatabaseUnavailable,
  type Logger,
  type RateCounter,
  withDeadline,
} from "@hatch/platform";
import { DATA_ERROR_STATUS, isToolError, type DataErrorCode, type DataRule } from "@hatch/contracts";
import { appOrigin, type AppsConfig } from "../config.ts";
import { canView, needsConsent, readViewerSession, type Viewer } from "../host/access.ts";
import type { HostedApp } from "../host/site.ts";
import type { LiveViewers } from "../host/viewers.ts";

// The common part of every data request on an app's origin (`/_hatch/me`, `/_hatch/db/…`, `/_hatch/files/…`): who
// is asking (the viewer the app host verified with the gateway, never anything the page sends), whether they may
// open the app at all, whether the request comes from the app's own pages, and the answer's JSON shape.

/** An expected refusal: becomes `{ error: { code, message } }` with the code's status. The message is for a person. */
export class DataError extends Error {
  constructor(
    readonly code: DataErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "DataError";
  }
}

const JSON_HEADERS = {
  "Content-Type": "application/json; charset=utf-8",
  "Cache-Control": "no-store",
  "X-Content-Type-Options": "nosniff",
};

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...JSON_HEADERS, ...headers } });
}

export function dataErrorResponse(error: DataError): Response {
  return json({ error: { code: error.code, message: error.message } }, DATA_ERROR_STATUS[error.code], error.headers);
}

/** Any failure of a data route as an answer: a DataError as itself, anything else `unavailable` (logged, never shown). */
/** `method`: the request's (a GET changed nothing, so it is just tried again). */
export function answerFailure(error: unknown, log: Logger, what: string, method = "POST"): Response {
  if (error instanceof DataError) return dataErrorResponse(error);
  if (isToolError(error) && error.code === "unavailable") {
    return dataErrorResponse(
      new DataError("unavailable", "Hatch could not check who you are right now. Try again in a minute.", {
        "Retry-After": "30",
      }),
    );
  }
  if (isDatabaseUnavailable(error)) {
    log.warn(`${what}: database unavailable`, { error });
    return dataErrorResponse(
      new DataError("unavailable", databaseUnavailableMessage(method !== "GET" && method !== "HEAD"), {
        "Retry-After": "5",
      }),
    );
  }
  log.error(`${what} failed`, { error });
  return dataErrorResponse(
    new DataError("unavailable", "Hatch could not do this right now. Try again in a moment.", { "Retry-After": "5" }),
  );
}

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
 * Whether a rule lets the caller do something. `creator` answers "creator": allowed for a signed-in viewer, on their
 * own documents or files only (the caller filters or compares `createdBy`).
 */
export function allows(rule: DataRule, caller: DataCaller): boolean | "creator" {
  const { viewer, app } = caller;
  switch (rule) {
    case "anyone":
      return true;
    case "signed_in":
      return viewer !== null;
    case "creator":
      return viewer !== null ? "creator" : false;
    case "org":
      return viewer !== null && viewer.account === app.accountId;
    case "owner":
      return viewer !== null && viewer.sub === app.ownerId;
  }
}

/** Why a rule refused, in words a viewer can act on. */
export function refusal(rule: DataRule, caller: DataCaller, action: string): DataError {
  if (!caller.viewer) return new DataError("forbidden", `Sign in to ${action} (hatch.signIn()).`);
  const who: Record<DataRule, string> = {
    anyone: "anyone",
    signed_in: "signed-in people",
    creator: "whoever created it",
    org: "members of the app owner's organization",
    owner: "the app's owner",
  };
  return new DataError(
    "forbidden",
    `Only ${who[rule]} may ${action} here; you are signed in as ${caller.viewer.email}.`,
  );
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

/** Counts a caller's data requests; refuses (DataError limit_exceeded with Retry-After) past the limit. */
export interface DataRateLimiter {
  take(key: string): void | Promise<void>;
}

/**
 * Data requests per caller per minute on this instance (a fixed window): the app host's limiter without NATS
 * (`bun run dev`, one process). With NATS the count is shared by every app host copy (SharedRateLimiter).
 */
export class RateLimiter implements DataRateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
    /** Callers remembered at most; beyond it the oldest windows are forgotten (memory stays bounded under a flood). */
    private readonly maxKeys = 50_000,
  ) {}

  /** Callers with a window now (tests). */
  get size(): number {
    return this.windows.size;
  }

  take(key: string): void {
    const now = this.now();
    let window = this.windows.get(key);
    if (!window || now - window.start >= 60_000) {
      if (!window && this.windows.size >= this.maxKeys) this.prune(now);
      // Re-inserted, so the map's order stays the order windows started in (the oldest first).
      this.windows.delete(key);
      window = { start: now, count: 0 };
      this.windows.set(key, window);
    }
    if (++window.count > this.perMinute) {
      const wait = Math.max(1, Math.ceil((window.start + 60_000 - now) / 1000));
      throw new DataError(
        "limit_exceeded",
        `Too many requests: at most ${this.perMinute} a minute. Try again in ${wait} s.`,
        { "Retry-After": String(wait) },
      );
    }
  }

  /**
   * Drops ended windows, then, while a flood keeps them all alive, the oldest ones down to 90% of the bound, so the
   * next scan is thousands of callers away (a scan for every new caller would cost a flood quadratic time).
   */
  private prune(now: number): void {
    const keep = Math.floor(this.maxKeys * 0.9);
    for (const [key, window] of this.windows) {
      if (now - window.start >= 60_000 || this.windows.size > keep) this.windows.delete(key);
    }
  }
}

/** How long a data request waits for the shared count before it goes on uncounted (NATS restarting). */
const SHARED_COUNT_MS = 1_500;

/**
 * Data requests per caller per minute counted in JetStream key-value (the `apps` rate bucket), so every app host copy
 * holds one limit. When the counter cannot answer in a moment, the request goes on uncounted (a limit is not worth an
 * outage) and the log says so.
 */
export class SharedRateLimiter implements DataRateLimiter {
  constructor(
    private readonly counter: RateCounter,
    private readonly perMinute: number,
    private readonly log: Logger,
  ) {}

  async take(key: string): Promise<void> {
    let decision: { allowed: boolean; retryAfterSeconds: number };
    try {
      decision = await withDeadline(
        this.counter.take(`data:${key}`, this.perMinute, 60_000),
        SHARED_COUNT_MS,
        () => new Error(`the rate counter did not answer in ${SHARED_COUNT_MS} ms`),
      );
    } catch (error) {
      this.log.warn("data request rate not counted", { error });
      return;
    }
    if (!decision.allowed) {
      throw new DataError(
        "limit_exceeded",
        `Too many requests: at most ${this.perMinute} a minute. Try again in ${decision.retryAfterSeconds} s.`,
        { "Retry-After": String(decision.retryAfterSeconds) },
      );
    }
  }
}
