/**
 * Slows down password guessing: after `limit` failures for one key (an email) inside `windowMs`, that key is
 * refused until the window has passed. Per gateway instance and in memory: it bounds guessing per instance;
 * a deployment with many instances would move it to shared storage.
 */
export class FailureThrottle {
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly limit = 5,
    private readonly windowMs = 15 * 60_000,
    private readonly maxKeys = 50_000,
  ) {}

  /** Seconds until the key may try again; 0 when it may try now. */
  retryAfter(key: string, now: number): number {
    const recent = this.recent(key, now);
    if (recent.length < this.limit) return 0;
    return Math.ceil((recent[0]! + this.windowMs - now) / 1000);
  }

  fail(key: string, now: number): void {
    const recent = this.recent(key, now);
    recent.push(now);
    this.failures.delete(key);
    this.failures.set(key, recent);
    if (this.failures.size > this.maxKeys) this.failures.delete(this.failures.keys().next().value as string);
  }

  clear(key: string): void {
    this.failures.delete(key);
  }

  private recent(key: string, now: number): number[] {
    return (this.failures.get(key) ?? []).filter((at) => now - at < this.windowMs);
  }
}
