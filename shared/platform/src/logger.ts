/* The one module allowed to write to the console: structured JSON lines. */
export const LOG_LEVELS = ["debug", "info", "warn", "error", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
type Fields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: Fields): void;
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
  child(fields: Fields): Logger;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export interface LoggerOptions {
  level?: LogLevel;
  fields?: Fields;
  /** Where lines go; tests capture them here. */
  write?: (line: string) => void;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const min = RANK[options.level ?? "info"];
  const write = options.write ?? ((line: string) => process.stdout.write(line + "\n"));
  const base = options.fields ?? {};
  const emit = (level: Exclude<LogLevel, "silent">, msg: string, fields?: Fields) => {
    if (RANK[level] < min) return;
    write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...base, ...fields }, errorReplacer));
  };
  return {
    debug: (msg, fields) => emit("debug", msg, fields),
    info: (msg, fields) => emit("info", msg, fields),
    warn: (msg, fields) => emit("warn", msg, fields),
    error: (msg, fields) => emit("error", msg, fields),
    child: (fields) => createLogger({ ...options, fields: { ...base, ...fields } }),
  };
}

function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) return serializeError(value, 0);
  return value;
}

type ErrorFields = Record<string, unknown>;

/**
 * Database errors carry the query's parameters (drizzle's DrizzleQueryError: `query`, `params` and a message that
 * repeats both; postgres.js: `query`, `parameters`; PGlite: `query`, `params`), and Postgres puts values in
 * `detail`, `where` and after the colon of messages such as `invalid input syntax for type integer: "…"`. A log line
 * keeps only the SQLSTATE code, a message cut before any value, the names of the table and constraint, and the
 * stack frames (the stack's first line repeats the message).
 */
function isDatabaseError(error: Error): boolean {
  const e = error as unknown as ErrorFields;
  if ("query" in e || "params" in e || "parameters" in e) return true;
  return typeof e.code === "string" && /^[0-9A-Z]{5}$/.test(e.code) && "severity" in e;
}

const framesOnly = (stack: string | undefined) =>
  stack
    ?.split("\n")
    .filter((line) => /^\s+at /.test(line))
    .join("\n");

function serializeError(error: Error, depth: number): ErrorFields {
  let out: ErrorFields;
  if (isDatabaseError(error)) {
    const e = error as unknown as ErrorFields;
    const sqlState = typeof e.code === "string" ? e.code : undefined;
    const message = "params" in e && !sqlState ? "database query failed" : error.message.split(": ")[0]!.slice(0, 160);
    out = {
      name: error.name === "Error" ? error.constructor.name : error.name,
      message,
      code: sqlState,
      table: e.table ?? e.table_name,
      constraint: e.constraint ?? e.constraint_name,
      stack: framesOnly(error.stack),
    };
  } else {
    out = { name: error.name, message: error.message, stack: error.stack };
  }
  if (error.cause instanceof Error && depth < 4) out.cause = serializeError(error.cause, depth + 1);
  return out;
}
