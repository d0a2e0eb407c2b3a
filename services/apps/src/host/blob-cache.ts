import type { BlobStore } from "../blobs/types.ts";

type Bytes = Uint8Array<ArrayBuffer>;

export interface BlobCacheOptions {
  /** Total bytes kept in memory. */
  maxBytes?: number;
  /** Larger files are streamed from the store each time. */
  maxFileBytes?: number;
}

/**
 * The bytes of small files, kept in memory by sha256. A blob never changes under its hash, so an entry is never
 * stale: no invalidation, only eviction (least recently used first) past `maxBytes`. Saves the store round trip
 * on every request: a stat and a read on disk, an HTTP request with S3. Concurrent misses share one read.
 */
export class BlobCache {
  private readonly entries = new Map<string, Bytes>();
  private readonly pending = new Map<string, Promise<Bytes | null>>();
  private readonly maxBytes: number;
  private readonly maxFileBytes: number;
  private bytes = 0;

  constructor(
    private readonly store: BlobStore,
    options: BlobCacheOptions = {},
  ) {
    this.maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
    this.maxFileBytes = options.maxFileBytes ?? 256 * 1024;
  }

  /** The file's body: cached bytes (synchronously), or a promise of bytes or a streamable Blob; null when the store lacks it. */
  get(sha256: string, size: number): Bytes | Promise<Bytes | Blob | null> {
    if (size > this.maxFileBytes) return this.store.get(sha256);
    const hit = this.entries.get(sha256);
    if (hit) {
      // Most recently used goes to the back of the Map's order.
      this.entries.delete(sha256);
      this.entries.set(sha256, hit);
      return hit;
    }
    return this.pending.get(sha256) ?? this.load(sha256);
  }

  /** Where the files are kept: "disk" (this copy's own folder) or "s3" (the object store every copy shares). */
  get storeKind(): BlobStore["kind"] {
    return this.store.kind;
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }

  private load(sha256: string): Promise<Bytes | null> {
    const loading = (async () => {
      try {
        const blob = await this.store.get(sha256);
        if (!blob) return null;
        const bytes = await blob.bytes();
        this.remember(sha256, bytes);
        return bytes;
      } finally {
        this.pending.delete(sha256);
      }
    })();
    this.pending.set(sha256, loading);
    return loading;
  }

  private remember(sha256: string, bytes: Bytes): void {
    if (this.entries.has(sha256) || bytes.byteLength > this.maxFileBytes) return;
    this.entries.set(sha256, bytes);
    this.bytes += bytes.byteLength;
    for (const [key, value] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(key);
      this.bytes -= value.byteLength;
    }
  }
}
