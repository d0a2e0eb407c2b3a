import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createBlobStore } from "../src/blobs/index.ts";
import { createS3BlobStore } from "../src/blobs/s3.ts";
import type { BlobStore } from "../src/blobs/types.ts";
import { type FakeS3, startFakeS3 } from "./support/fake-s3.ts";

const sha256 = (bytes: Uint8Array) => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
const bytesOf = (text: string) => new TextEncoder().encode(text);

interface Subject {
  store: BlobStore;
  close(): Promise<void>;
}

const implementations: Record<"disk" | "s3", () => Promise<Subject>> = {
  async disk() {
    const dir = await mkdtemp(join(tmpdir(), "hatch-blobs-"));
    return {
      store: createBlobStore({ blobDir: dir, s3: null }),
      close: () => rm(dir, { recursive: true, force: true }),
    };
  },
  async s3() {
    const fake = startFakeS3({ accessKeyId: "AKTEST", secretAccessKey: "s3cr3t/key+value", region: "eu-west-1" });
    const store = createBlobStore({ blobDir: "/nonexistent", s3: settingsOf(fake) });
    return { store, close: () => fake.stop() };
  },
};

function settingsOf(fake: FakeS3) {
  const { bucket, endpoint, region, accessKeyId, secretAccessKey } = fake;
  return { bucket, endpoint, region, accessKeyId, secretAccessKey };
}

for (const [kind, open] of Object.entries(implementations)) {
  describe(`BlobStore contract: ${kind}`, () => {
    let subject: Subject;
    let store: BlobStore;
    beforeAll(async () => {
      subject = await open();
      store = subject.store;
    });
    afterAll(() => subject.close());

    test("is the kind the configuration asked for", () => {
      expect(store.kind).toBe(kind as BlobStore["kind"]);
    });

    test("put, has and get round-trip the bytes", async () => {
      const bytes = bytesOf(`<h1>hello from ${kind}</h1>`);
      const hash = sha256(bytes);
      expect(await store.has(hash)).toBe(false);
      await store.put(hash, bytes);
      expect(await store.has(hash)).toBe(true);
      const blob = await store.get(hash);
      expect(blob).not.toBeNull();
      expect(await blob!.bytes()).toEqual(bytes);
    });

    test("a second put of the same blob changes nothing", async () => {
      const bytes = bytesOf("same content twice");
      const hash = sha256(bytes);
      await store.put(hash, bytes);
      await store.put(hash, bytes);
      expect(await (await store.get(hash))!.bytes()).toEqual(bytes);
    });

    test("a missing blob: has is false, get is null", async () => {
      const hash = sha256(bytesOf("never stored"));
      expect(await store.has(hash)).toBe(false);
      expect(await store.get(hash)).toBeNull();
    });

    test("delete removes a blob; deleting a missing one is fine", async () => {
      const bytes = bytesOf("to be deleted");
      const hash = sha256(bytes);
      await store.put(hash, bytes);
      await store.delete(hash);
      expect(await store.has(hash)).toBe(false);
      expect(await store.get(hash)).toBeNull();
      await store.delete(hash);
      await store.delete(sha256(bytesOf("never stored either")));
    });

    test("refuses anything that is not a lowercase sha256 hex digest", async () => {
      const bytes = bytesOf("x");
      for (const bad of ["abc", sha256(bytes).toUpperCase(), `../${"a".repeat(61)}`, `${sha256(bytes)}/x`]) {
        await expect(store.put(bad, bytes)).rejects.toThrow("not a sha256 hex digest");
        await expect(store.has(bad)).rejects.toThrow("not a sha256 hex digest");
        await expect(store.get(bad)).rejects.toThrow("not a sha256 hex digest");
        await expect(store.delete(bad)).rejects.toThrow("not a sha256 hex digest");
      }
    });

    test("keeps binary content intact (all 256 byte values), streamed into a Response", async () => {
      const bytes = Uint8Array.from({ length: 512 }, (_, i) => (i * 7) % 256);
      const hash = sha256(bytes);
      await store.put(hash, bytes);
      const blob = await store.get(hash);
      const served = new Uint8Array(await new Response(blob!.stream()).arrayBuffer());
      expect(served).toEqual(bytes);
      expect(new Set(served).size).toBe(256);
    });

    test("stores and returns a 5 MB blob", async () => {
      const bytes = Uint8Array.from({ length: 5 * 1024 * 1024 }, (_, i) => (i * 31 + (i >>> 10)) & 0xff);
      const hash = sha256(bytes);
      await store.put(hash, bytes);
      const back = await (await store.get(hash))!.bytes();
      expect(back.byteLength).toBe(bytes.byteLength);
      expect(sha256(back)).toBe(hash);
    });
  });
}

describe("S3 blob store against the fake S3", () => {
  let fake: FakeS3;
  beforeAll(() => {
    fake = startFakeS3({ accessKeyId: "AKTEST", secretAccessKey: "the-right-secret", region: "us-east-1" });
  });
  afterAll(() => fake.stop());

  test("objects live under blobs/<first two hex digits>/<sha256>, typed application/octet-stream", async () => {
    const store = createS3BlobStore(settingsOf(fake));
    let bytes = bytesOf("blob 0");
    for (let i = 1; !sha256(bytes).startsWith("ab"); i++) bytes = bytesOf(`blob ${i}`);
    const hash = sha256(bytes);
    await store.put(hash, bytes);
    const key = `blobs/ab/${hash}`;
    expect([...fake.objects.keys()]).toContain(key);
    expect(fake.objects.get(key)).toEqual(bytes);
    expect(fake.contentTypes.get(key)).toBe("application/octet-stream");
    expect(fake.requests.at(-1)).toEqual({ method: "PUT", key, status: 200 });
  });

  test("a store with the wrong secret is refused: the error surfaces and nothing is stored", async () => {
    const store = createS3BlobStore({ ...settingsOf(fake), secretAccessKey: "a-wrong-secret" });
    const bytes = bytesOf("signed with the wrong key");
    const hash = sha256(bytes);
    const key = `blobs/${hash.slice(0, 2)}/${hash}`;
    const error = await store.put(hash, bytes).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error & { code?: string }).code).toBe("SignatureDoesNotMatch");
    expect(fake.objects.has(key)).toBe(false);
    expect(fake.requests.at(-1)).toEqual({ method: "PUT", key, status: 403 });
    // A refused HEAD must not read as "missing", or a publish would think the blob still needs uploading.
    await expect(store.has(hash)).rejects.toThrow();
    await expect(store.get(hash)).rejects.toThrow();
    await expect(store.delete(hash)).rejects.toThrow();
  });

  test("a store configured for another region is refused", async () => {
    const store = createS3BlobStore({ ...settingsOf(fake), region: "eu-central-1" });
    const bytes = bytesOf("wrong region");
    const error = await store.put(sha256(bytes), bytes).catch((e: unknown) => e);
    expect((error as Error & { code?: string }).code).toBe("AuthorizationHeaderMalformed");
    expect(fake.objects.has(`blobs/${sha256(bytes).slice(0, 2)}/${sha256(bytes)}`)).toBe(false);
  });

  test("fails loudly without credentials", () => {
    expect(() => createS3BlobStore({ ...settingsOf(fake), secretAccessKey: "" })).toThrow("secret access key");
  });
});
