import { databaseUnavailableMessage, isDatabaseUnavailable, type Logger } from "@hatch/platform";
import { isToolError } from "@hatch/contracts";
import { DATA_ERROR_STATUS, type DataErrorCode } from "../spec/data-rules.ts";

// The answers every route on an app's origin shares (data, server code, outbound calls): the JSON shape of a
// refusal, and any failure turned into one (never a raw message).

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

export function methodNotAllowed(allowed: string): Response {
  return json({ error: { code: "invalid", message: `This address answers ${allowed} only.` } }, 405, {
    Allow: allowed,
  });
}
