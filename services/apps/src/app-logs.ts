import { SERVER_LIMITS } from "./spec/server-code.ts";
import { type Database, type Logger } from "@hatch/platform";
import { and, desc, eq, inArray, lt } from "drizzle-orm";
import { appLogs } from "./db/schema.ts";
/** A log line's level (console.debug/log/info → debug/info, warn, error). */
export type LogLevel = "debug" | "info" | "warn" | "error";

// An app's log lines (console.* of its server code, and what the app host says about its requests: uncaught errors,
// CPU, memory and wall-time kills). Lines are buffered and written in batches, one insert per flush, then each app
// written is pruned to its newest SERVER_LIMITS.logLinesKept lines. tool_logs reads them.

export interface LogLine {
  appId: string;
  level: LogLevel;
  message: string;
  at: Date;
}

export interface AppLogWriterOptions {
  /** How often buffered lines are written (default 1 s). */
  flushMs?: number;
  /** Lines kept per app (default SERVER_LIMITS.logLinesKept). */
  kept?: number;
  /** Lines buffered at most; beyond it a flush starts at once. */
  maxBuffered?: number;
}

export class AppLogWriter {
  private buffer: LogLine[] = [];
  private flushing: Promise<void> = Promise.resolve();
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly kept: number;
  private readonly maxBuffered: number;

  constructor(
    private readonly db: Database,
    private readonly log: Logger,
    options: AppLogWriterOptions = {},
  ) {
    this.kept = options.kept ?? SERVER_LIMITS.logLinesKept;
    this.maxBuffered = options.maxBuffered ?? 2000;
    this.timer = setInterval(() => void this.flush(), options.flushMs ?? 1000);
    this.timer.unref?.();
  }

  /** One request's lines, in order, with the cap per request: past it, one line says how many were dropped. */
  request(appId: string, lines: readonly [LogLevel, string][], droppedBefore = 0): void {
    const max = SERVER_LIMITS.logLinesPerRequest;
    const kept = lines.slice(0, max);
    const dropped = droppedBefore + Math.max(0, lines.length - max);
    for (const [level, message] of kept) this.add(appId, level, message);
    if (dropped > 0)
      this.add(
        appId,
        "warn",
        `${dropped} more log lines of this request were dropped (at most ${max} lines per request are kept).`,
      );
  }

  /** A line of its own (the app host's word about a request). */
  add(appId: string, level: LogLevel, message: string): void {
    const max = SERVER_LIMITS.logLineChars;
    this.buffer.push({
      appId,
      level,
      message: message.length > max ? `${message.slice(0, max - 1)}…` : message,
      at: new Date(),
    });
    if (this.buffer.length >= this.maxBuffered) void this.flush();
  }

  /** Writes what is buffered (one insert), then prunes the apps written. Flushes run one after another. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private async write(): Promise<void> {
    if (this.buffer.length === 0) return;
    const lines = this.buffer;
    this.buffer = [];
    try {
      await this.db.insert(appLogs).values(lines);
      for (const appId of new Set(lines.map((line) => line.appId))) await this.prune(appId);
    } catch (error) {
      // A deleted app's lines fail its foreign key; other failures lose these lines, never the service.
      this.log.warn("app log lines could not be written", { lines: lines.length, error });
    }
  }

  private async prune(appId: string): Promise<void> {
    const [edge] = await this.db
      .select({ id: appLogs.id })
      .from(appLogs)
      .where(eq(appLogs.appId, appId))
      .orderBy(desc(appLogs.id))
      .offset(this.kept - 1)
      .limit(1);
    if (edge) await this.db.delete(appLogs).where(and(eq(appLogs.appId, appId), lt(appLogs.id, edge.id)));
  }
}

const SEVERITY: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** The newest `limit` lines of an app at `level` or more severe, oldest first; `truncated` when older ones exist. */
export async function readAppLogs(
  db: Database,
  appId: string,
  level: LogLevel | undefined,
  limit: number,
): Promise<{ lines: LogLine[]; truncated: boolean }> {
  const levels = (Object.keys(SEVERITY) as LogLevel[]).filter((name) => SEVERITY[name] >= SEVERITY[level ?? "debug"]);
  const rows = await db
    .select()
    .from(appLogs)
    .where(and(eq(appLogs.appId, appId), inArray(appLogs.level, levels)))
    .orderBy(desc(appLogs.id))
    .limit(limit + 1);
  const truncated = rows.length > limit;
  return { lines: rows.slice(0, limit).reverse(), truncated };
}
