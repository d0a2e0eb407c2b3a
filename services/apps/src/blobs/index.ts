import type { AppsConfig } from "../config.ts";
import { createDiskBlobStore } from "./disk.ts";
import type { BlobStore } from "./types.ts";

/** The store the configuration asks for: S3 when S3_BUCKET is set, else files under BLOB_DIR. */
export function createBlobStore(config: Pick<AppsConfig, "blobDir" | "s3">): BlobStore {
  if (config.s3) throw new Error("the S3 blob store is not wired yet");
  return createDiskBlobStore(config.blobDir);
}
