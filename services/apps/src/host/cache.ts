import type { HostedApp } from "../http/site.ts";

export interface AppCacheOptions {
  /** Safety net for a missed invalidation broadcast: an entry is reloaded at the latest after this long. */
  ttlMs?: number;
  maxEntries?: number;
  now?: () => number;
}

interface Entry {
  app: HostedApp;
  expires: number;
}

/**
 * Apps by address with their current version's file map, so serving a file asks the database nothing. Dropped
 * explicitly (`invalidate`, on the broadcast every change sends) and after a short TTL. Concurrent misses for one
 * address share a single load.
 */
export class AppCache {
  private readonly entries = new Map<string, Entry>();
  /** Addresses with no app, apart: probing made-up names cannot push real apps out of the cache. */
  private readonly missing = new Map<string, number>();
  private readonly pending = new Map<string, Promise<HostedApp | null>>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(
    private readonly load: (address: string) => Promise<HostedApp | null>,
    options: AppCacheOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 10_000;
    this.maxEntries = options.maxEntries ?? 5_000;
    this.now = options.now ?? Date.now;
  }

  /** The cached app when fresh (no promise on the hot path), else a promise of the loaded one. */
  get(address: string): HostedApp | null | Promise<HostedApp | null> {
    const hit = this.entries.get(address);
    if (hit && hit.expires > this.now()) return hit.app;
    const miss = this.missing.get(address);
    if (miss !== undefined && miss > this.now()) return null;
    return this.pending.get(address) ?? this.startLoad(address);
  }

  invalidate(address: string): void {
    this.entries.delete(address);
    this.missing.delete(address);
    // A load already under way may have read the old row: forget it, so its result is not stored.
    this.pending.delete(address);
  }

  clear(): void {
    this.entries.clear();
    this.missing.clear();
    this.pending.clear();
  }

  get size(): number {
    return this.entries.size;
  }

  private startLoad(address: string): Promise<HostedApp | null> {
    const loading = this.load(address).then(
      (app) => {
        if (this.pending.get(address) === loading) {
          this.pending.delete(address);
          this.store(address, app);
        }
        return app;
      },
      (error: unknown) => {
        if (this.pending.get(address) === loading) this.pending.delete(address);
        throw error;
      },
    );
    this.pending.set(address, loading);
    return loading;
  }

  private store(address: string, app: HostedApp | null): void {
    if (!app) {
      this.missing.delete(address);
      if (this.missing.size >= this.maxEntries) this.missing.delete(this.missing.keys().next().value!);
      this.missing.set(address, this.now() + this.ttlMs);
      return;
    }
    this.entries.delete(address);
    // Oldest insertion first out: a refreshed entry moves to the back, so busy apps stay.
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(address, { app, expires: this.now() + this.ttlMs });
  }
}
