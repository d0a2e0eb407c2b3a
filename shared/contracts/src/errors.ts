/** The error codes that cross the bus (architecture, "A tool call"). Local errors stay local. */
export const ERROR_CODES = [
  "invalid_input",
  "not_found",
  "forbidden",
  "conflict",
  "limit_exceeded",
  "needs_payment",
  "unavailable",
  "internal",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** The one HTTP status of each code, wherever a failure is answered over HTTP (pages, uploads). */
const HTTP_STATUS: Record<ErrorCode, number> = {
  invalid_input: 400,
  not_found: 404,
  forbidden: 403,
  conflict: 409,
  limit_exceeded: 413,
  needs_payment: 402,
  unavailable: 503,
  internal: 500,
};

/** The HTTP status of an error code; 400 for a code that is not one (a refusal of a page's own). */
export function httpStatusOf(code: string): number {
  return (HTTP_STATUS as Record<string, number>)[code] ?? 400;
}

/**
 * An expected failure a handler reports to the caller. `message` is shown to the AI as it is, so it must say
 * what to do next and carry nothing internal (no SQL, no stack, no other user's data).
 */
export class ToolError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = "ToolError";
    this.code = code;
  }
}

export function isToolError(error: unknown): error is ToolError {
  return error instanceof ToolError;
}
