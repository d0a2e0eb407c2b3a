import { z } from "zod";
import { DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_STATEMENT_TIMEOUT_MS, type PostgresPoolSettings } from "./db.ts";
import { LOG_LEVELS } from "./logger.ts";
import { DEFAULT_SHUTDOWN_TIMEOUT_MS } from "./shutdown.ts";

/** A configuration problem found at start; its message lists every bad variable and what is expected. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

const url = (protocols: string[], example: string) =>
  z.string().refine((v) => URL.canParse(v) && protocols.includes(new URL(v).protocol), {
    message: `must be a URL starting with ${protocols.join(" or ")} (for example ${example})`,
  });

const millis = (example: string, min: number, max: number) =>
  z.coerce
    .number({ error: `must be a number of milliseconds, for example ${example}` })
    .int("must be a whole number of milliseconds")
    .min(min, `must be at least ${min} (milliseconds)`)
    .max(max, `must be at most ${max} (milliseconds)`);

/** Variables every process reads. Each component extends this with its own. */
export const CommonEnvSchema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  LOG_LEVEL: z.enum(LOG_LEVELS).default("info"),
  DATA_DIR: z.string().min(1).default(".data"),
  DATABASE_URL: url(["postgres:", "postgresql:"], "postgres://user@127.0.0.1:5432/hatch").optional(),
  /** A direct connection for migrations when DATABASE_URL goes through a pooler (shared/platform/src/db.ts). */
  DATABASE_MIGRATION_URL: url(["postgres:", "postgresql:"], "postgres://user@127.0.0.1:5432/hatch").optional(),
  /** `transaction`: DATABASE_URL goes through a pooler in transaction mode (PgBouncer); see PostgresPoolSettings. */
  DATABASE_POOLER: z.enum(["none", "transaction"], { error: "must be none or transaction" }).default("none"),
  /** Connections this process opens at most; each process has its own default (services 10, the gateway 20). */
  DB_POOL_SIZE: z.coerce
    .number({ error: "must be a number of connections, for example 10" })
    .int("must be a whole number")
    .min(1, "must be at least 1")
    .max(100, "must be at most 100")
    .optional(),
  DB_IDLE_TIMEOUT_MS: millis("30000", 0, 3_600_000).default(DEFAULT_IDLE_TIMEOUT_MS),
  DB_STATEMENT_TIMEOUT_MS: millis("30000", 0, 3_600_000).default(DEFAULT_STATEMENT_TIMEOUT_MS),
  /** One NATS server or several, comma-separated (the nodes of a cluster): the client connects to any that answers. */
  NATS_URL: z
    .string()
    .refine(
      (v) =>
        v.split(",").every((one) => {
          const u = one.trim();
          return URL.canParse(u) && ["nats:", "tls:"].includes(new URL(u).protocol);
        }),
      {
        message:
          "must be a URL starting with nats: or tls:, or several separated by commas (for example nats://n1:4222,nats://n2:4222)",
      },
    )
    .optional(),
  /**
   * Copies JetStream keeps of each stream and key-value bucket (1 on one server, 3 on a 3-node cluster). Existing
   * streams and buckets are brought to this number at start.
   */
  NATS_REPLICAS: z.coerce
    .number({ error: "must be a number of copies: 1, or 3 on a 3-node cluster" })
    .int("must be a whole number of copies")
    .min(1, "must be at least 1")
    .max(5, "must be at most 5 (JetStream's limit)")
    .default(1),
  /** This process's NATS user and password (one user per process, with subject permissions: deploy/nats-auth.conf). */
  NATS_USER: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, "must be a NATS user name (letters, digits, _ and -)")
    .optional(),
  NATS_PASSWORD: z.string().min(8, "must be at least 8 characters").optional(),
  BUS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]*$/, "may hold only letters, digits, '_' and '-' (it becomes a NATS subject token)")
    .default(""),
  HATCH_SECRET: z
    .string()
    .min(32, "must be at least 32 characters; generate one with `openssl rand -hex 32`")
    .optional(),
  /** How long a stopping process may take before it exits anyway (shared/platform/src/shutdown.ts). */
  SHUTDOWN_TIMEOUT_MS: z.coerce
    .number({ error: "must be a number of milliseconds, for example 10000" })
    .int("must be a whole number of milliseconds")
    .min(100, "must be at least 100 (milliseconds)")
    .max(600_000, "must be at most 600000 (10 minutes)")
    .default(DEFAULT_SHUTDOWN_TIMEOUT_MS),
  /** Traces go to this OTLP/HTTP collector (`/v1/traces` is added); unset: no tracing (shared/platform/src/telemetry/tracing.ts). */
  OTEL_EXPORTER_OTLP_ENDPOINT: url(["http:", "https:"], "http://127.0.0.1:4318").optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url(["http:", "https:"], "http://127.0.0.1:4318/v1/traces").optional(),
  /** /metrics answers only `Authorization: Bearer <METRICS_TOKEN>` when set (the gateway's: only then, outside dev). */
  METRICS_TOKEN: z
    .string()
    .min(16, "must be at least 16 characters; generate one with `openssl rand -hex 16`")
    .optional(),
  /** A process without its own HTTP server (a service started alone) serves /metrics on this port when set. */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  METRICS_HOST: z.string().min(1).default("127.0.0.1"),
});
export type CommonEnv = z.infer<typeof CommonEnvSchema>;

/**
 * Where apps are served: the apps service's settings, which the gateway reads too (the publish view's preview frame).
 * APPS_DOMAIN goes into a CSP there, so nothing but a host name and a port is taken.
 */
export const AppsHostEnvSchema = z.object({
  APP_PORT: z.coerce.number().int().min(0).max(65535).default(3001),
  APPS_DOMAIN: z
    .string()
    .regex(
      /^[a-z0-9.-]+(?::\d+)?$/,
      "must be a host name with an optional port, e.g. apps.example.com or localhost:3001",
    )
    .optional(),
  APPS_PROTOCOL: z.enum(["http", "https"]).optional(),
});

/** An app's origin is `<protocol>//<address>.<domain>`: https with APPS_DOMAIN, else http on localhost:APP_PORT. */
export function appsHostOf(env: z.infer<typeof AppsHostEnvSchema>): { protocol: "http:" | "https:"; domain: string } {
  return {
    protocol: env.APPS_PROTOCOL ? `${env.APPS_PROTOCOL}:` : env.APPS_DOMAIN ? "https:" : "http:",
    domain: env.APPS_DOMAIN ?? `localhost:${env.APP_PORT}`,
  };
}

/** Parses the environment against a schema; on failure throws one ConfigError naming every bad variable. */
export function loadConfig<S extends z.ZodType>(
  schema: S,
  env: Record<string, string | undefined> = process.env,
): z.infer<S> {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const result = schema.safeParse(cleaned);
  if (result.success) return result.data;
  const lines = result.error.issues.map((issue) => `  ${issue.path.join(".") || "(environment)"}: ${issue.message}`);
  throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
}

/** A process's Postgres pool settings from its environment (CommonEnvSchema); `defaultPoolSize` when DB_POOL_SIZE is unset. */
export function databaseSettingsFrom(env: CommonEnv, defaultPoolSize: number): PostgresPoolSettings {
  return {
    maxConnections: env.DB_POOL_SIZE ?? defaultPoolSize,
    idleTimeoutMs: env.DB_IDLE_TIMEOUT_MS,
    statementTimeoutMs: env.DB_STATEMENT_TIMEOUT_MS,
    pooler: env.DATABASE_POOLER,
    migrationUrl: env.DATABASE_MIGRATION_URL,
  };
}
