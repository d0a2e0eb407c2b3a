import type { KV } from "@nats-io/kv";

/**
 * A JetStream key-value bucket opened on first use and shared by every use after it. A failed open is not kept: the
 * next use opens again (NATS may have been restarting), so one bad moment at start does not fail every later call.
 */
export class LazyKv {
  private bucket: Promise<KV> | null = null;
  constructor(private readonly open: () => Promise<KV>) {}

  get(): Promise<KV> {
    this.bucket ??= this.open().catch((error: unknown) => {
      this.bucket = null;
      throw error;
    });
    return this.bucket;
  }

  /** Drops the handle: the next use opens the bucket again. */
  forget(): void {
    this.bucket = null;
  }
}
