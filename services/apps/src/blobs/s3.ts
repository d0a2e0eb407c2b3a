import { S3Client } from "bun";
import type { S3Settings } from "../config.ts";
import { assertSha256, type BlobStore } from "./types.ts";

const CONTENT_TYPE = "application/octet-stream";

/** The object key of a blob: `blobs/<first two hex digits>/<sha256>`, like the disk store's fan-out. */
export function s3KeyOf(sha256: string): string {
  assertSha256(sha256);
  return `blobs/${sha256.slice(0, 2)}/${sha256}`;
}

/**
 * Blobs as objects in one bucket, through Bun's built-in S3 client (AWS Signature V4, path-style URLs, so it
 * works with AWS, R2 and MinIO alike). Options left unset fall back to Bun's own S3_* / AWS_* environment
 * variables (region, endpoint, session token).
 */
export function createS3BlobStore(settings: S3Settings): BlobStore {
  if (!settings.bucket || !settings.accessKeyId || !settings.secretAccessKey) {
    throw new Error("the S3 blob store needs a bucket, an access key id and a secret access key");
  }
  const client = new S3Client({
    bucket: settings.bucket,
    endpoint: settings.endpoint,
    region: settings.region,
    accessKeyId: settings.accessKeyId,
    secretAccessKey: settings.secretAccessKey,
  });
  const fileOf = (sha256: string) => client.file(s3KeyOf(sha256), { type: CONTENT_TYPE });
  return {
    kind: "s3",
    async has(sha256) {
      return fileOf(sha256).exists();
    },
    async put(sha256, bytes) {
      // No HEAD first (it would cost every new blob a round trip): a PUT replaces the object atomically and a
      // key always carries the same bytes, so repeating it changes nothing.
      await fileOf(sha256).write(bytes, { type: CONTENT_TYPE });
    },
    async get(sha256) {
      const file = fileOf(sha256);
      return (await file.exists()) ? file : null;
    },
    async delete(sha256) {
      try {
        await fileOf(sha256).delete();
      } catch (error) {
        // S3 answers 204 for a missing key; some compatible stores answer 404 NoSuchKey instead.
        if (!isNoSuchKey(error)) throw error;
      }
    },
  };
}

function isNoSuchKey(error: unknown): boolean {
  return error instanceof Error && (error as Error & { code?: unknown }).code === "NoSuchKey";
}
