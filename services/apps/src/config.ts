import { AppsHostEnvSchema, appsHostOf, CommonEnvSchema, loadConfig } from "@hatch/platform";
import { DATA_LIMITS } from "./spec/data-rules.ts";
import { join, resolve } from "node:path";
import { z } from "zod";
import { previewLabel } from "./host/host-names.ts";

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
   * Take the viewer's address from the last X-Forwarded-For entry (the one the proxy added) (only behind a proxy that sets it): the app
   * host's unique-viewer counting uses it, hashed, never stored raw.
   */
  trustProxy: boolean;
  /** Where content-addressed files live when no S3 store is configured. */
  blobDir: string;
  s3: S3Settings | null;
  /** Data requests per viewer per app per minute (DATA_LIMITS' value unless set; benchmarks raise it). */
  dataRequestsPerMinute: number;
  /**
   * Keys that seal secret values and AI keys (SECRETS_KEYS, the first seals, all open); null = one key derived from
   * HATCH_SECRET (id "derived"), fine for development, not for production (see SECURITY.md).
   */
  secretsKeys: { id: string; key: Buffer }[] | null;
  /** AI providers by name with their OpenAI-compatible base URL (AI_PROVIDERS); tests point one at a local fake. */
  aiProviders: ReadonlyMap<string, string>;
  /**
   * Whether declared APIs may be on loopback or private addresses (API_PRIVATE_HOSTS). Default: yes in development
   * (no APPS_DOMAIN), no otherwise, so an app cannot reach the service's own network.
   */
  apiPrivateHosts: boolean;
}

/** OpenAI-compatible chat completions endpoints Hatch knows when AI_PROVIDERS is not set. */
export const DEFAULT_AI_PROVIDERS =
  "openai=https://api.openai.com/v1,anthropic=https://api.anthropic.com/v1,openrouter=https://openrouter.ai/api/v1,groq=https://api.groq.com/openai/v1,mistral=https://api.mistral.ai/v1,gemini=https://generativelanguage.googleapis.com/v1beta/openai";

const SecretsKeysSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,32}:[A-Za-z0-9+/=_-]{43,44}(,[A-Za-z0-9_-]{1,32}:[A-Za-z0-9+/=_-]{43,44})*$/, {
    message:
      "must be id:key pairs separated by commas, each key 32 random bytes in base64 (openssl rand -base64 32), the current key first",
  })
  .transform((value) =>
    value.split(",").map((pair) => ({
      id: pair.slice(0, pair.indexOf(":")),
      key: Buffer.from(pair.slice(pair.indexOf(":") + 1), "base64"),
    })),
  )
  .refine((keys) => keys.every((k) => k.key.length === 32), {
    message: "each key must be 32 bytes (openssl rand -base64 32)",
  })
  .refine((keys) => new Set(keys.map((k) => k.id)).size === keys.length, { message: "key ids must differ" });

const AiProvidersSchema = z
  .string()
  .regex(/^[a-z0-9-]{1,40}=https?:\/\/[^\s,]+(,[a-z0-9-]{1,40}=https?:\/\/[^\s,]+)*$/, {
    message: "must be name=base-url pairs separated by commas, e.g. openai=https://api.openai.com/v1",
  })
  .transform(
    (value) =>
      new Map(
        value
          .split(",")
          .map(
            (pair) =>
              [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1).replace(/\/+$/, "")] as const,
          ),
      ),
  );

export interface S3Settings {
  bucket: string;
  endpoint?: string;
  region?: string;
  accessKeyId: string;
  secretAccessKey: string;
}

const AppsEnvSchema = CommonEnvSchema.extend(AppsHostEnvSchema.shape).extend({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  BASE_URL: z.url({ protocol: /^https?$/ }).optional(),
  APP_HOST: z.string().min(1).default("127.0.0.1"),
  TRUST_PROXY: z.enum(["true", "false"]).optional(),
  BLOB_DIR: z.string().min(1).optional(),
  S3_BUCKET: z.string().min(1).optional(),
  S3_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  S3_REGION: z.string().min(1).optional(),
  S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  DATA_REQUESTS_PER_MINUTE: z.coerce.number().int().min(1).default(DATA_LIMITS.requestsPerViewerPerMinute),
  SECRETS_KEYS: SecretsKeysSchema.optional(),
  AI_PROVIDERS: AiProvidersSchema.default(AiProvidersSchema.parse(DEFAULT_AI_PROVIDERS)),
  API_PRIVATE_HOSTS: z.enum(["true", "false"]).optional(),
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
  const appsHost = appsHostOf(parsed);
  return {
    gatewayUrl: (parsed.BASE_URL ?? `http://localhost:${parsed.PORT}`).replace(/\/+$/, ""),
    appPort: parsed.APP_PORT,
    appHostname: parsed.APP_HOST,
    appsProtocol: appsHost.protocol,
    appsDomain: appsHost.domain,
    trustProxy: parsed.TRUST_PROXY === "true",
    blobDir: resolve(parsed.BLOB_DIR ?? join(parsed.DATA_DIR, "blobs")),
    dataRequestsPerMinute: parsed.DATA_REQUESTS_PER_MINUTE,
    secretsKeys: parsed.SECRETS_KEYS ?? null,
    aiProviders: parsed.AI_PROVIDERS,
    apiPrivateHosts: parsed.API_PRIVATE_HOSTS ? parsed.API_PRIVATE_HOSTS === "true" : !parsed.APPS_DOMAIN,
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

/**
 * A non-current version's preview origin: `v<N>--<address>.<apps domain>`, one label below the apps domain like an
 * app's own, so the apps domain's wildcard certificate covers it (host/host-names.ts); never an app's origin (no address
 * contains `--`). Null when that label would be too long for DNS.
 */
export function previewOrigin(
  config: Pick<AppsConfig, "appsProtocol" | "appsDomain">,
  address: string,
  version: number,
): string | null {
  const label = previewLabel(address, version);
  return label === null ? null : `${config.appsProtocol}//${label}.${config.appsDomain}`;
}

/** The bare apps origin (uploads, the viewer sign-in return). */
export function appsRootOrigin(config: Pick<AppsConfig, "appsProtocol" | "appsDomain">): string {
  return `${config.appsProtocol}//${config.appsDomain}`;
}
