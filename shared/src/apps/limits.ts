/**
 * Limits of a published folder. The service enforces them and the developer reference prints them, so
 * both read this one table. Sizes are bytes.
 */
export const PUBLISH_LIMITS = {
  /** Files in one version (manifest entries). */
  maxFiles: 20_000,
  /** One file. */
  maxFileBytes: 25 * 1024 * 1024,
  /** All files of one version together. */
  maxTotalBytes: 250 * 1024 * 1024,
  /** Inline publishing: files per call, and their decoded bytes together (larger folders use a manifest). */
  maxInlineFiles: 500,
  maxInlineBytes: 3 * 1024 * 1024,
  /** How long an upload URL from a manifest publish stays valid. */
  uploadUrlTtlSeconds: 3_600,
  /** Characters of an app's name. */
  maxNameLength: 80,
} as const;

export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${bytes} bytes`;
}
