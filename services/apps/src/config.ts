import { CommonEnvSchema, DATA_LIMITS, loadConfig } from "@hatch/shared";
import { join, resolve } from "node:path";
import { z } from "zod";

/** The apps service's settings, read from its environment (every one has a working default for `bun run dev`). */
export interface AppsConfig {
  /** The gateway's public origin: viewers sign in there, users confirm there. */
  gatewayUrl: string;
  /** Port of the app host (0 = any free port, for tests). */
  appPort: number;
  appHostname: string;
  /**
   * How an app's origin is built: `<protocol>//<address>.<appsDomain>`. In dev `localhost:3001`, so apps open at
   * http://my-app.localhost:3001 (browsers resolve *.localhost to loopback). The bare domain serves uploads.
   */
  appsProtocol: "http:" | "https:";
  appsDomain: string;
  /**
   * Take the viewer's address from the first X-Forwarded-For entry (only behind a proxy that sets it): the app
   * host's unique-viewer counting uses it, hashed, never stored raw.
   */
  trustProxy: boolean;
  /** Where content-addressed files live when no S3 store is configured. */
  blobDir: string;
  s3: S3Settings | null;
  /** Data requests per viewer per app per minute (DATA_LIMITS' value unless set; benchmarks raise it). */
  dataRequestsPerMinute: number;
}

export interface S3Settings {
  bucket: string;
  endpoint?: string;
  region?: string;
  accessKeyId: string;
  secretAccessKey: string;
}

const AppsEnvSchema = CommonEnvSchema.extend({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  BASE_URL: z.url({ protocol: /^https?$/ }).optional(),
  APP_PORT: z.coerce.number().int().min(0).max(65535).default(3001),
  APP_HOST: z.string().min(1).default("127.0.0.1"),
  APPS_DOMAIN: z
    .string()
    .regex(/^[a-z0-9.-]+(?::\d+)?$/, "must be a host name with an optional port, e.g. apps.example.com or localhost:3001")
    .optional(),
  APPS_PROTOCOL: z.enum(["http", "https"]).optional(),
  TRUST_PROXY: z.enum(["true", "false"]).optional(),
  BLOB_DIR: z.string().min(1).optional(),
  S3_BUCKET: z.string().min(1).optional(),
  S3_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  S3_REGION: z.string().min(1).optional(),
  S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  DATA_REQUESTS_PER_MINUTE: z.coerce.number().int().min(1).default(DATA_LIMITS.requestsPerViewerPerMinute),
});

/** Parses the environment; throws ConfigError naming every bad variable. */
export function loadAppsConfig(env: Record<string, string | undefined>): AppsConfig {
  const parsed = loadConfig(
    AppsEnvSchema.refine((e) => !e.S3_BUCKET || (e.S3_ACCESS_KEY_ID && e.S3_SECRET_ACCESS_KEY), {
      message: "S3_BUCKET needs S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY too",
      path: ["S3_BUCKET"],
    }),
    env,
  );
  return {
    gatewayUrl: (parsed.BASE_URL ?? `http://localhost:${parsed.PORT}`).replace(/\/+$/, ""),
    appPort: parsed.APP_PORT,
    appHostname: parsed.APP_HOST,
    appsProtocol: parsed.APPS_PROTOCOL ? `${parsed.APPS_PROTOCOL}:` : parsed.APPS_DOMAIN ? "https:" : "http:",
    appsDomain: parsed.APPS_DOMAIN ?? `localhost:${parsed.APP_PORT}`,
    trustProxy: parsed.TRUST_PROXY === "true",
    blobDir: resolve(parsed.BLOB_DIR ?? join(parsed.DATA_DIR, "blobs")),
    dataRequestsPerMinute: parsed.DATA_REQUESTS_PER_MINUTE,
    s3: parsed.S3_BUCKET
      ? {
          bucket: parsed.S3_BUCKET,
          endpoint: parsed.S3_ENDPOINT,
          region: parsed.S3_REGION,
          accessKeyId: parsed.S3_ACCESS_KEY_ID!,
          secretAccessKey: parsed.S3_SECRET_ACCESS_KEY!,
        }
      : null,
  };
}

/** The origin an app is served on, e.g. http://my-todo.localhost:3001. */
export function appOrigin(config: Pick<AppsConfig, "appsProtocol" | "appsDomain">, address: string): string {
  return `${config.appsProtocol}//${address}.${config.appsDomain}`;
}

/** The bare apps origin (uploads, the viewer sign-in return). */
export function appsRootOrigin(config: Pick<AppsConfig, "appsProtocol" | "appsDomain">): string {
  return `${config.appsProtocol}//${config.appsDomain}`;
}
