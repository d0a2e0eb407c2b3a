/**
 * Content-addressed file storage: a blob's key is the sha256 of its bytes (64 lowercase hex), so the same
 * content is stored once however many apps and versions use it. Implementations: disk (default) and S3.
 */
export interface BlobStore {
  readonly kind: "disk" | "s3";
  has(sha256: string): Promise<boolean>;
  /** Stores the bytes under their hash. Idempotent; the caller has already checked the hash. */
  put(sha256: string, bytes: Uint8Array): Promise<void>;
  /**
   * A Blob (a Bun file or an S3 file), or null when missing. Serve it as `new Response(blob.stream())`:
   * Bun turns `new Response(s3File)` into a 302 redirect to a presigned URL on the S3 endpoint.
   */
  get(sha256: string): Promise<Blob | null>;
  /** Removes a blob; missing is not an error. */
  delete(sha256: string): Promise<void>;
}

export const SHA256_HEX = /^[0-9a-f]{64}$/;

export function assertSha256(sha256: string): void {
  if (!SHA256_HEX.test(sha256)) throw new Error(`not a sha256 hex digest: ${sha256.slice(0, 80)}`);
}
