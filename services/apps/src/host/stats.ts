import { eq, inArray, sql } from "drizzle-orm";
import { newEvent } from "@hatch/contracts";
import { writeEvent, type Database, type Logger } from "@hatch/platform";
import { appsTable, dailyOpens, dailyViewers, outbox } from "../db/schema.ts";

export interface StatsOptions {
  flushEveryMs?: number;
  /** Pending viewer rows past which new ones are dropped (and logged) rather than grow memory while the database is down. */
  maxPendingViewers?: number;
}

/**
 * Opens and unique viewers per app per UTC day, counted in memory and written in batches (upsert into
 * daily_opens, insert-or-ignore into daily_viewers) every couple of seconds and on stop, so a page view never
 * waits on the database. A viewer is a keyed hash of the app id with the user id, or with the IP address and
 * user agent: no raw address is kept, here or in the table, and a hash cannot be linked across apps.
 */
export class StatsCounter {
  private opens = new Map<string, number>();
  private viewers = new Set<string>();
  /** Seeded hashes of the viewers counted since the last write (so each is hashed with the key once per batch). */
  private seen = new Set<bigint>();
  private readonly seed = crypto.getRandomValues(new BigUint64Array(1))[0]!;
  private flushing: Promise<void> = Promise.resolve();
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly maxPendingViewers: number;
  private day = "";
  private dayEnds = 0;
  private dropWarned = false;

  constructor(
    private readonly db: Database,
    private readonly key: Buffer,
    private readonly logger: Logger,
    options: StatsOptions = {},
  ) {
    this.maxPendingViewers = options.maxPendingViewers ?? 100_000;
    this.timer = setInterval(() => void this.flush(), options.flushEveryMs ?? 2_000);
    this.timer.unref();
  }

  /** `who`: "u:<user id>" for a signed-in viewer, else "a:<ip>\n<user agent>" (hashed here, never stored). */
  count(appId: string, who: string, nowMs = Date.now()): void {
    const day = this.dayOf(nowMs);
    const key = `${appId}\n${day}`;
    this.opens.set(key, (this.opens.get(key) ?? 0) + 1);
    if (this.viewers.size >= this.maxPendingViewers) {
      if (!this.dropWarned) this.logger.warn("stats: too many unique viewers waiting to be written; dropping some");
      this.dropWarned = true;
      return;
    }
    // A viewer already counted for this app and day since the last write costs one seeded 64-bit hash, not the
    // HMAC (the hash is kept only in memory, with a seed of this process that is never stored).
    const seen = Bun.hash.wyhash(`${key}\n${who}`, this.seed);
    if (this.seen.has(seen)) return;
    this.seen.add(seen);
    // Bun's own HMAC: a third of node:crypto's cost here.
    const viewer = new Bun.CryptoHasher("sha256", this.key).update(`${appId}\n${who}`).digest("base64url");
    this.viewers.add(`${key}\n${viewer}`);
  }

  /** Writes what was counted so far; calls queue behind one another. Never throws: a failed batch is kept for the next. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private async write(): Promise<void> {
    if (this.opens.size === 0 && this.viewers.size === 0) return;
    const opens = this.opens;
    const viewers = this.viewers;
    this.opens = new Map();
    this.viewers = new Set();
    this.seen = new Set();
    this.dropWarned = false;
    const openRows = [...opens].map(([key, count]) => {
      const [appId, day] = key.split("\n") as [string, string];
      return { appId, day, opens: count };
    });
    const viewerRows = [...viewers].map((key) => {
      const [appId, day, viewer] = key.split("\n") as [string, string, string];
      return { appId, day, viewer };
    });
    try {
      await this.insert(openRows, viewerRows);
    } catch (error) {
      // An app deleted since it was counted fails its rows (foreign key): write app by app and drop those.
      this.logger.debug("stats batch failed; writing app by app", { error });
      await this.insertByApp(openRows, viewerRows, opens, viewers);
    }
  }

  private async insert(
    openRows: { appId: string; day: string; opens: number }[],
    viewerRows: { appId: string; day: string; viewer: string }[],
  ): Promise<void> {
    if (openRows.length > 0) {
      // The counts and their usage events (billing counts opens from them) in one transaction: both or neither.
      await this.db.transaction(async (tx) => {
        await tx
          .insert(dailyOpens)
          .values(openRows)
          .onConflictDoUpdate({
            target: [dailyOpens.appId, dailyOpens.day],
            set: { opens: sql`${dailyOpens.opens} + excluded.opens` },
          });
        const apps = await tx
          .select({ id: appsTable.id, address: appsTable.address, accountId: appsTable.accountId })
          .from(appsTable)
          .where(inArray(appsTable.id, [...new Set(openRows.map((r) => r.appId))]));
        const byId = new Map(apps.map((app) => [app.id, app]));
        for (const row of openRows) {
          const app = byId.get(row.appId);
          if (!app) continue;
          const summary = `${row.opens} opens of ${app.address} on ${row.day}`;
          await writeEvent(
            tx,
            outbox,
            newEvent("apps", null, {
              entity: "app",
              verb: "opened",
              summary,
              app: app.address,
              account: app.accountId,
              org: null,
              details: { opens: row.opens, day: row.day },
            }),
          );
        }
      });
    }
    for (let i = 0; i < viewerRows.length; i += 1_000) {
      await this.db
        .insert(dailyViewers)
        .values(viewerRows.slice(i, i + 1_000))
        .onConflictDoNothing();
    }
  }

  private async insertByApp(
    openRows: { appId: string; day: string; opens: number }[],
    viewerRows: { appId: string; day: string; viewer: string }[],
    opens: Map<string, number>,
    viewers: Set<string>,
  ): Promise<void> {
    const apps = new Set([...openRows.map((r) => r.appId), ...viewerRows.map((r) => r.appId)]);
    for (const appId of apps) {
      try {
        await this.insert(
          openRows.filter((r) => r.appId === appId),
          viewerRows.filter((r) => r.appId === appId),
        );
      } catch (error) {
        if (await this.appGone(appId)) continue;
        // The database is down or busy: keep this app's counts for the next flush.
        this.logger.warn("stats not written; will retry", { appId, error });
        for (const [key, count] of opens)
          if (key.startsWith(`${appId}\n`)) this.opens.set(key, (this.opens.get(key) ?? 0) + count);
        for (const key of viewers)
          if (key.startsWith(`${appId}\n`) && this.viewers.size < this.maxPendingViewers) this.viewers.add(key);
      }
    }
  }

  private async appGone(appId: string): Promise<boolean> {
    try {
      const rows = await this.db.select({ id: appsTable.id }).from(appsTable).where(eq(appsTable.id, appId)).limit(1);
      return rows.length === 0;
    } catch {
      return false;
    }
  }

  private dayOf(nowMs: number): string {
    if (nowMs >= this.dayEnds || nowMs < this.dayEnds - 86_400_000) {
      const start = nowMs - (nowMs % 86_400_000);
      this.day = new Date(start).toISOString().slice(0, 10);
      this.dayEnds = start + 86_400_000;
    }
    return this.day;
  }
}
