import { DrizzleQueryError } from "drizzle-orm/errors";

// Telling "the database is down or restarting" apart from a real bug, so that the AI or the page is told to try again
// in a moment (code `unavailable`) instead of getting an internal error with a request id to report.

/**
 * postgres.js's own connection codes, and Postgres's: 57P01-03 (shut down, starting), 57014 (cancelled: the statement
 * timeout, DB_STATEMENT_TIMEOUT_MS, on a database too slow right now), class 08 (connection), class 53 (insufficient
 * resources: 53300 too many connections, out of memory or disk; the server is there but cannot serve).
 */
const POSTGRES_CODES =
  /^(?:CONNECTION_(?:CLOSED|ENDED|DESTROYED)|CONNECT_TIMEOUT|57P0[123]|57014|08[0-9A-Z]{3}|53[0-9A-Z]{3})$/;
/** Postgres answered but cannot take us yet: class 53 (53300: no free connection) or 57P03 (starting or stopping). */
const BUSY_CODES = /^(?:57P03|53[0-9A-Z]{3})$/;
/** Socket errors, which count only in a failed query or a connect to the database: elsewhere they may be any service. */
const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT"]);

/**
 * The ports of the Postgres servers this process opened (openServiceDatabase notes them): a refused connect to one of
 * them is the database, also where postgres.js throws it bare (a transaction's BEGIN is not wrapped by drizzle).
 */
const databasePorts = new Set<number>();

export function noteDatabasePort(port: number): void {
  databasePorts.add(port);
}

/** True when `error` (or what it wraps) says the database could not be reached, not that a query was wrong. */
export function isDatabaseUnavailable(error: unknown): boolean {
  let inQuery = false;
  for (let e: unknown = error, depth = 0; e && typeof e === "object" && depth < 6; depth++) {
    const { code, name, cause, syscall, port } = e as Record<string, unknown>;
    if (e instanceof DrizzleQueryError || name === "PostgresError") inQuery = true;
    const toDatabase = inQuery || (syscall === "connect" && typeof port === "number" && databasePorts.has(port));
    if (typeof code === "string" && (POSTGRES_CODES.test(code) || (toDatabase && SOCKET_CODES.has(code)))) return true;
    e = cause;
  }
  return false;
}

/**
 * True when Postgres itself refused for now (no free connection, starting up): waiting is the cure, so a process
 * that starts waits for it (openServiceDatabase's `waitWhileBusy`). A refused port or a wrong query is not busy.
 */
export function isDatabaseBusy(error: unknown): boolean {
  return busyRefusal(error) !== null;
}

/** The Postgres code of a busy refusal in `error` (or what it wraps), and its own words; null when not busy. */
export function busyRefusal(error: unknown): { code: string; reason: string } | null {
  for (let e: unknown = error, depth = 0; e && typeof e === "object" && depth < 6; depth++) {
    const { code, message, cause } = e as Record<string, unknown>;
    if (typeof code === "string" && BUSY_CODES.test(code)) return { code, reason: String(message ?? "") };
    e = cause;
  }
  return null;
}

/** What a tool or page says when the database could not be reached; `changes`: the call may have changed something. */
export function databaseUnavailableMessage(changes: boolean): string {
  return changes
    ? "Hatch's database is not answering right now (it may be restarting), so this may not have taken effect. Check, then try again in a moment."
    : "Hatch's database is not answering right now (it may be restarting). Try again in a moment.";
}
