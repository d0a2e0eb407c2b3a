import { DATA_NAME } from "../spec/data-rules.ts";
import { SERVER_LIMITS } from "../spec/server-code.ts";
import { appOrigin, type AppsConfig } from "../config.ts";
import { DataError, dataErrorResponse } from "../http/answers.ts";
import { type DataCaller } from "../http/caller.ts";
import type { Outbound } from "../http/outbound.ts";
import { readAtMost } from "./call.ts";

// `/_hatch/api/<name>/<path>?<query>` on an app's origin: hatch.api() from the app's pages. The answer is the API's
// own (status, body, a few headers, the secret scrubbed); Hatch's own refusals carry HATCH_ERROR_HEADER, so the
// browser library can tell them from the API's own error answers.

export const HATCH_ERROR_HEADER = "X-Hatch-Error";

/** Marks one of Hatch's own error answers (the JSON `{ error: { code, message } }`). */
export function hatchErrorResponse(error: DataError): Response {
  const response = dataErrorResponse(error);
  response.headers.set(HATCH_ERROR_HEADER, error.code);
  return response;
}

/** Request headers read from the page (the rest, cookies above all, never leave: see apis/call.ts). */
function headersOf(request: Request): Record<string, string> {
  const out: Record<string, string> = {};
  request.headers.forEach((value, key) => {
    out[key] = value;
  });
  delete out.cookie;
  delete out.authorization;
  return out;
}

/**
 * Only the app's own pages may call its APIs (each call spends the owner's quota with their secret): a request from
 * another origin, a sibling app included, is refused. A top-level GET opened by the person (Sec-Fetch-Site none) is
 * fine; requests without these headers are not from a browser page and carry no one else's cookie.
 */
function checkFromOwnPages(
  request: Request,
  config: Pick<AppsConfig, "appsProtocol" | "appsDomain">,
  address: string,
): void {
  const site = request.headers.get("sec-fetch-site");
  const origin = request.headers.get("origin");
  const safe = request.method === "GET" || request.method === "HEAD";
  if (
    (site !== null && site !== "same-origin" && !(safe && site === "none")) ||
    (origin !== null && origin !== appOrigin(config, address))
  ) {
    throw new DataError("forbidden", "This app's APIs can only be called from the app's own pages.");
  }
}

/** Answers one hatch.api() call; `rest` is the path after /_hatch/api/. Throws DataError for the caller to answer. */
export async function answerApi(
  outbound: Outbound,
  config: Pick<AppsConfig, "appsProtocol" | "appsDomain">,
  request: Request,
  url: URL,
  rest: string,
  caller: DataCaller,
): Promise<Response> {
  checkFromOwnPages(request, config, caller.app.address);
  const slash = rest.indexOf("/");
  const name = slash === -1 ? rest : rest.slice(0, slash);
  if (!DATA_NAME.test(name))
    throw new DataError("not_found", "Call an API as /_hatch/api/<name>/<path>, with a name from service.json apis.");
  const path = (slash === -1 ? "" : rest.slice(slash)) + url.search;
  const hasBody = request.method !== "GET" && request.method !== "HEAD";
  const limit = SERVER_LIMITS.maxRequestBytes;
  const body = !hasBody
    ? null
    : Number(request.headers.get("content-length") ?? "0") > limit
      ? null
      : await readAtMost(request.body, limit);
  if (hasBody && body === null)
    throw new DataError("too_large", `A request to an API may carry at most ${limit} bytes.`);
  const result = await outbound.callApi(
    caller.app,
    name,
    path,
    { method: request.method, headers: headersOf(request), body: body && body.byteLength ? body : null },
    { source: "browser", viewer: caller.viewer },
  );
  const headers = new Headers(result.headers);
  headers.set("Cache-Control", "no-store");
  headers.set("X-Content-Type-Options", "nosniff");
  // Whatever the API returns is served on the app's origin: opened directly, it may not run as the app's page.
  headers.set("Content-Security-Policy", "sandbox; default-src 'none'");
  const empty = [101, 204, 205, 304].includes(result.status) || request.method === "HEAD";
  return new Response(empty ? null : (result.body as Uint8Array<ArrayBuffer>), { status: result.status, headers });
}
