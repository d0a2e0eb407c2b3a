// The fake S3 must refuse what S3 refuses, or the adapter tests that run against it prove nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { S3Client } from "bun";
import { createS3BlobStore } from "../src/blobs/s3.ts";
import { type FakeS3, sigV4Signature, startFakeS3 } from "./support/fake-s3.ts";

describe("fake S3", () => {
  let fake: FakeS3;
  let clockOffsetMs = 0;
  beforeAll(() => {
    fake = startFakeS3({ now: () => new Date(Date.now() + clockOffsetMs) });
  });
  afterAll(() => fake.stop());
  const store = () => createS3BlobStore({ ...fake });
  const hash = "ab".repeat(32);

  test("computes the signature of AWS's documented example (GET /test.txt with a Range header)", () => {
    const headers = new Headers({
      host: "examplebucket.s3.amazonaws.com",
      range: "bytes=0-9",
      "x-amz-content-sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "x-amz-date": "20130524T000000Z",
    });
    const signature = sigV4Signature({
      method: "GET",
      path: "/test.txt",
      query: "",
      headers,
      signedHeaders: ["host", "range", "x-amz-content-sha256", "x-amz-date"],
      payloadHash: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      amzDate: "20130524T000000Z",
      region: "us-east-1",
      secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    });
    expect(signature).toBe("f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  });

  test("canonicalises the path as Bun signs it, for keys with spaces and reserved characters", async () => {
    const key = "odd keys/a b+c(1)*!'~.txt";
    await new S3Client({ ...fake }).write(key, "odd");
    expect(new TextDecoder().decode(fake.objects.get(key))).toBe("odd");
    expect(fake.requests.at(-1)).toEqual({ method: "PUT", key, status: 200 });
  });

  test("refuses an unsigned request with S3's AccessDenied XML and stores nothing", async () => {
    const key = `blobs/ab/${hash}`;
    const response = await fetch(`${fake.endpoint}/${fake.bucket}/${key}`, { method: "PUT", body: "anonymous" });
    expect(response.status).toBe(403);
    expect(response.headers.get("content-type")).toBe("application/xml");
    expect(await response.text()).toContain("<Code>AccessDenied</Code>");
    expect(fake.objects.has(key)).toBe(false);
  });

  test("accepts Bun's signed requests and refuses them when its clock is 20 minutes off", async () => {
    await store().put(hash, new Uint8Array([1, 2, 3]));
    expect(await store().has(hash)).toBe(true);
    clockOffsetMs = 20 * 60 * 1000;
    try {
      const error = await store()
        .delete(hash)
        .catch((e: unknown) => e);
      expect((error as Error & { code?: string }).code).toBe("RequestTimeTooSkewed");
      expect(fake.objects.has(`blobs/ab/${hash}`)).toBe(true);
    } finally {
      clockOffsetMs = 0;
    }
  });

  test("answers a missing key with 404 NoSuchKey XML and a missing bucket with NoSuchBucket", async () => {
    const missing = store();
    const other = createS3BlobStore({ ...fake, bucket: "another-bucket" });
    const absent = "cd".repeat(32);
    expect(await missing.get(absent)).toBeNull();
    expect(fake.requests.at(-1)).toEqual({ method: "HEAD", key: `blobs/cd/${absent}`, status: 404 });
    const error = await other.put(absent, new Uint8Array([1])).catch((e: unknown) => e);
    expect((error as Error & { code?: string }).code).toBe("NoSuchBucket");
  });
});
