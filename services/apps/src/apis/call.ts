import { SERVER_LIMITS, type ApiRule } from "../spec/server-code.ts";
import type { AppsContext } from "../context.ts";
import { allows, refusal } from "../http/rules.ts";
import { DataError } from "../http/answers.ts";
import type { ApiCallInit, ApiCallResult, Outbound, OutboundCaller } from "../http/outbound.ts";
import type { HostedApp } from "../http/site.ts";
import { destinationText } from "../secrets/destinations.ts";
import { openSecretFor } from "../secrets/store.ts";
import { formsOf, redact, redactText } from "./redact.ts";
import { apiUrl, destination, resolveHostAddresses } from "./target.ts";

// Outbound.callApi: a call to an API the app's service.json declares, with the secret injected here, at the last
// moment, and scrubbed from whatever comes back. Redirects are never followed: a 3xx goes back as it is, without its
// Location (a redirect could lead off the base url, or to a page that echoes the secret in a URL the browser shows).

export interface ApiCallerOptions {
  /** Default SERVER_LIMITS.apiTimeoutSeconds; tests make it small. */
  timeoutMs?: number;
  maxResponseBytes?: number;
  maxRequestBytes?: number;
  resolveHost?: (hostname: string) => Promise<string[]>;
}

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
/** Request headers a caller may set; anything else (cookies, authorization, proxy and hop-by-hop headers) is dropped. */
const FORWARDED = new Set([
  "accept",
  "accept-language",
  "content-type",
  "content-language",
  "if-match",
  "if-none-match",
  "if-modified-since",
  "prefer",
]);
/** Response headers passed back besides those of rate limits; never Set-Cookie or the API's own caching rules. */
const PASSED_BACK = new Set(["content-type", "content-language", "etag", "last-modified", "retry-after"]);
const NO_BODY = new Set([101, 204, 205, 304]);

export function createApiCaller(
  apps: Pick<AppsContext, "db" | "sealer" | "config" | "logger">,
  options: ApiCallerOptions = {},
): Outbound["callApi"] {
  const timeoutMs = options.timeoutMs ?? SERVER_LIMITS.apiTimeoutSeconds * 1000;
  const maxResponse = options.maxResponseBytes ?? SERVER_LIMITS.maxApiResponseBytes;
  const maxRequest = options.maxRequestBytes ?? SERVER_LIMITS.maxRequestBytes;
  const resolveHost = options.resolveHost ?? resolveHostAddresses;
  const log = apps.logger.child({ component: "api-call" });

  return async function callApi(
    app: HostedApp,
    name: string,
    path: string,
    init: ApiCallInit,
    caller: OutboundCaller,
  ): Promise<ApiCallResult> {
    const api = declaredApi(app, name);
    if (caller.source === "browser") {
      // "creator" has no meaning for an API: it lets any signed-in viewer through, as signed_in does.
      if (!allows(api.browser, { app, viewer: caller.viewer, rateKey: "" }))
        throw refusal(api.browser, { app, viewer: caller.viewer, rateKey: "" }, `call the API ${name}`);
    }
    const method = init.method.toUpperCase();
    if (!METHODS.has(method))
      throw new DataError(
        "invalid",
        `The method ${init.method.slice(0, 20)} is not allowed; use ${[...METHODS].join(", ")}.`,
      );
    if (init.body && init.body.byteLength > maxRequest)
      throw new DataError("too_large", `A request to an API may carry at most ${maxRequest} bytes.`);
    const url = apiUrl(name, api, path);
    const headers = forwardedHeaders(name, api, init.headers);
    const to = await destination(name, url, apps.config.apiPrivateHosts, resolveHost);

    const secret = await secretValue(apps, app, api, name, log);
    if ("header" in api.in) {
      const value = (api.in.prefix ?? "") + secret;
      // A value Headers would refuse; Bun's error would quote it, so it is checked here first.
      if (!/^[\t\x20-\x7e\x80-\xff]*$/.test(value))
        throw new DataError(
          "unavailable",
          `The value of ${api.secret} cannot be sent in a header (it has line breaks or other control characters). The app's owner should set it again with tool_secret.`,
        );
      headers.set(api.in.header, value);
    } else {
      to.url.search = `${to.url.search ? `${to.url.search}&` : "?"}${encodeURIComponent(api.in.query)}=${encodeURIComponent(secret)}`;
    }
    if (to.host) headers.set("Host", to.host.header);
    headers.set("User-Agent", "Hatch");

    const started = performance.now();
    let response: Response;
    let body: Uint8Array;
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      response = await fetch(to.url, {
        method,
        headers,
        body: method === "GET" || method === "HEAD" || !init.body ? undefined : (init.body as Uint8Array<ArrayBuffer>),
        redirect: "manual",
        signal,
        ...(to.host ? { tls: { serverName: to.host.serverName } } : {}),
      });
      body =
        NO_BODY.has(response.status) || method === "HEAD"
          ? new Uint8Array()
          : await readCapped(response, maxResponse, name);
    } catch (error) {
      if (error instanceof DataError) throw error;
      // The error's message may quote the URL, whose query may carry the secret: only its name is logged.
      const timedOut = signal.aborted;
      log.warn("declared API call failed", {
        address: app.address,
        api: name,
        error: error instanceof Error ? error.name : "unknown",
        timedOut,
      });
      throw new DataError(
        "unavailable",
        timedOut
          ? `The API ${name} did not answer within ${Math.round(timeoutMs / 100) / 10} s.`
          : `The API ${name} could not be reached.`,
      );
    }
    log.info("declared API call", {
      address: app.address,
      api: name,
      source: caller.source,
      status: response.status,
      ms: Math.round(performance.now() - started),
    });
    const forms = formsOf(secret);
    return { status: response.status, headers: passedBack(response.headers, forms), body: redact(body, forms) };
  };
}

function declaredApi(app: HostedApp, name: string): ApiRule {
  const apis = app.site?.apis ?? new Map<string, ApiRule>();
  const api = apis.get(name);
  if (api) return api;
  const declared = [...apis.keys()].sort();
  throw new DataError(
    "not_found",
    declared.length
      ? `This app declares no API "${name}"; service.json apis has: ${declared.join(", ")}.`
      : `This app declares no API "${name}": add it to service.json apis (service_docs topic service_json, Declared APIs) and publish.`,
  );
}

function forwardedHeaders(name: string, api: ApiRule, given: Record<string, string>): Headers {
  const headers = new Headers();
  for (const [key, value] of Object.entries(given)) {
    const lower = key.toLowerCase();
    if ("header" in api.in && lower === api.in.header.toLowerCase()) {
      throw new DataError(
        "invalid",
        `Do not set the header ${api.in.header} for the API ${name}: Hatch adds the secret ${api.secret} there.`,
      );
    }
    if (
      FORWARDED.has(lower) ||
      (lower.startsWith("x-") && !lower.startsWith("x-forwarded-") && lower !== "x-real-ip")
    ) {
      try {
        headers.set(key, value);
      } catch {
        throw new DataError("invalid", `The header ${key.slice(0, 64)} has a value that cannot be sent.`);
      }
    }
  }
  return headers;
}

async function secretValue(
  apps: Pick<AppsContext, "db" | "sealer">,
  app: HostedApp,
  api: ApiRule,
  name: string,
  log: {
    error(msg: string, fields?: Record<string, unknown>): void;
    warn(msg: string, fields?: Record<string, unknown>): void;
  },
): Promise<string> {
  let found: Awaited<ReturnType<typeof openSecretFor>>;
  try {
    found = await openSecretFor(apps, app.id, api.secret, api);
  } catch {
    log.error("a secret did not open (its key is no longer in SECRETS_KEYS, or the row was altered)", {
      address: app.address,
      secret: api.secret,
    });
    throw new DataError(
      "unavailable",
      `The secret ${api.secret} of this app could not be read. The app's owner should set it again with tool_secret.`,
    );
  }
  if (found.state === "unset") {
    throw new DataError(
      "unavailable",
      `The secret ${api.secret} is not set, so the API ${name} cannot be called. The app's owner sets it with tool_secret (name ${api.secret}).`,
    );
  }
  if (found.state === "unconfirmed") {
    // A publish pointed this API somewhere its owner never saw when setting the value: nothing is sent there.
    log.warn("declared API call held: the secret's destination is not confirmed", {
      address: app.address,
      api: name,
      secret: api.secret,
    });
    throw new DataError(
      "unavailable",
      `The API ${name} now goes to ${destinationText(api)}, which the app's owner has not confirmed for the secret ${api.secret}, so nothing was sent. The owner confirms the new destination on the secret's page (tool_secret, name ${api.secret}).`,
    );
  }
  return found.value;
}

/** The answer's body up to `limit` bytes; DataError too_large past it (reading stops there). */
async function readCapped(response: Response, limit: number, name: string): Promise<Uint8Array> {
  const declared = Number(response.headers.get("content-length") ?? "0");
  const body = declared > limit ? null : await readAtMost(response.body, limit);
  if (body === null) {
    await response.body?.cancel().catch(() => {});
    throw new DataError("too_large", `The API ${name} answered more than ${limit} bytes, more than Hatch passes on.`);
  }
  return body;
}

/** A stream's bytes, or null as soon as it is longer than `limit` (it is cancelled then). */
export async function readAtMost(stream: ReadableStream<Uint8Array> | null, limit: number): Promise<Uint8Array | null> {
  if (!stream) return new Uint8Array();
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks);
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
}

function passedBack(headers: Headers, forms: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, key) => {
    if (PASSED_BACK.has(key) || key.startsWith("x-ratelimit-") || key.startsWith("ratelimit"))
      out[key] = redactText(value, forms);
  });
  return out;
}
