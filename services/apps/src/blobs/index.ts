import type { AppsConfig } from "../config.ts";
import { createDiskBlobStore } from "./disk.ts";
import { createS3BlobStore } from "./s3.ts";
import type { BlobStore } from "./types.ts";

/** The store the configuration asks for: S3 when S3_BUCKET is set, else files under BLOB_DIR. */
export function createBlobStore(config: Pick<AppsConfig, "blobDir" | "s3">): BlobStore {
  return config.s3 ? createS3BlobStore(config.s3) : createDiskBlobStore(config.blobDir);
}
