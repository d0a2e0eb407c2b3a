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
