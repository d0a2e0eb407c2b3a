import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDiskBlobStore } from "../src/blobs/disk.ts";
import { BlobCache } from "../src/host/blob-cache.ts";
import { AppCache } from "../src/host/cache.ts";
import type { HostedApp } from "../src/http/site.ts";

const app = (address: string, version = 1): HostedApp => ({
  id: `id-${address}`,
  address,
  accountId: "acct",
  ownerId: "owner",
  visibility: "public",
  paused: false,
  people: new Set(),
  site: {
    version,
    spa: false,
    notFound: null,
    files: new Map(),
    collections: new Map(),
    buckets: new Map(),
    server: null,
    apis: new Map(),
  },
  ai: { choice: "none", payerId: null },
});

/** A loader whose answers the test releases by hand, counting calls. */
function manualLoader() {
  const calls: string[] = [];
  const waiting: { address: string; resolve: (value: HostedApp | null) => void }[] = [];
  const load = (address: string) => {
    calls.push(address);
    return new Promise<HostedApp | null>((resolve) => waiting.push({ address, resolve }));
  };
  return { calls, waiting, load };
}

describe("app cache", () => {
  test("a hit is synchronous; concurrent misses share one load", async () => {
    const loader = manualLoader();
    const cache = new AppCache(loader.load);
    const first = cache.get("a");
    const second = cache.get("a");
    expect(first).toBeInstanceOf(Promise);
    expect(second).toBe(first);
    loader.waiting[0]!.resolve(app("a"));
    expect((await first)?.address).toBe("a");
    expect(cache.get("a")).toMatchObject({ address: "a" });
    expect(loader.calls).toEqual(["a"]);
  });

  test("a load that was under way when the app changed is not kept", async () => {
    const loader = manualLoader();
    const cache = new AppCache(loader.load);
    const stale = cache.get("a");
    cache.invalidate("a");
    const fresh = cache.get("a");
    loader.waiting[0]!.resolve(app("a", 1));
    loader.waiting[1]!.resolve(app("a", 2));
    expect((await stale)?.site?.version).toBe(1);
    expect((await fresh)?.site?.version).toBe(2);
    expect(cache.get("a")).toMatchObject({ site: { version: 2 } });
  });

  test("entries expire after the TTL", async () => {
    let now = 1_000;
    let version = 0;
    const cache = new AppCache(async (address) => app(address, ++version), { ttlMs: 10_000, now: () => now });
    await cache.get("a");
    now += 9_999;
    expect(cache.get("a")).toMatchObject({ site: { version: 1 } });
    now += 2;
    expect((await cache.get("a"))?.site?.version).toBe(2);
  });

  test("unknown addresses are remembered apart and never push real apps out", async () => {
    const cache = new AppCache(async (address) => (address.startsWith("real") ? app(address) : null), {
      maxEntries: 2,
    });
    await cache.get("real-1");
    await cache.get("real-2");
    for (let i = 0; i < 10; i++) expect(await cache.get(`probe-${i}`)).toBeNull();
    expect(cache.get("real-1")).toMatchObject({ address: "real-1" });
    expect(cache.get("real-2")).toMatchObject({ address: "real-2" });
    expect(cache.get("probe-9")).toBeNull();
  });
});

describe("blob cache", () => {
  const store = createDiskBlobStore(mkdtempSync(join(tmpdir(), "hatch-blob-cache-")));
  const put = async (text: string) => {
    const bytes = new TextEncoder().encode(text);
    const sha = createHash("sha256").update(bytes).digest("hex");
    await store.put(sha, bytes);
    return { sha, size: bytes.byteLength };
  };

  test("small files are read once, then answered from memory; the least recently used go first", async () => {
    const cache = new BlobCache(store, { maxBytes: 10, maxFileBytes: 8 });
    const a = await put("aaaa");
    const b = await put("bbbb");
    const c = await put("cccc");
    expect(new TextDecoder().decode((await cache.get(a.sha, a.size)) as Uint8Array)).toBe("aaaa");
    expect(cache.get(a.sha, a.size)).toBeInstanceOf(Uint8Array);
    await cache.get(b.sha, b.size);
    void cache.get(a.sha, a.size);
    await cache.get(c.sha, c.size);
    // 12 bytes > 10: b, least recently used, is gone; a and c stay.
    expect(cache.size).toEqual({ entries: 2, bytes: 8 });
    expect(cache.get(a.sha, a.size)).toBeInstanceOf(Uint8Array);
    expect(cache.get(c.sha, c.size)).toBeInstanceOf(Uint8Array);
    expect(cache.get(b.sha, b.size)).toBeInstanceOf(Promise);
  });

  test("large files are streamed from the store, a missing blob is null", async () => {
    const cache = new BlobCache(store, { maxFileBytes: 4 });
    const big = await put("larger than four");
    const body = await cache.get(big.sha, big.size);
    expect(body).toBeInstanceOf(Blob);
    expect(cache.size.entries).toBe(0);
    expect(await cache.get("0".repeat(64), 3)).toBeNull();
  });
});
