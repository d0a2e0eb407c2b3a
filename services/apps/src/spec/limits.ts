import { PUBLISH_INPUT_LIMITS } from "@hatch/contracts";

/**
 * Limits of a published folder. The service enforces them and the developer reference prints them, so both read this
 * one table. What one `publish` call takes inline (and an app's name) is the tool's contract (PUBLISH_INPUT_LIMITS in
 * @hatch/contracts, checked by the gateway too). Sizes are bytes.
 */
export const PUBLISH_LIMITS = {
  ...PUBLISH_INPUT_LIMITS,
  /** Files in one version (manifest entries). */
  maxFiles: 20_000,
  /** One file. */
  maxFileBytes: 25 * 1024 * 1024,
  /** All files of one version together. */
  maxTotalBytes: 250 * 1024 * 1024,
  /** How long an upload URL (a folder's tar, or a manifest's missing files) stays valid. */
  uploadUrlTtlSeconds: 3_600,
} as const;
