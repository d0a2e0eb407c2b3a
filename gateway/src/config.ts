import { AppsHostEnvSchema, appsHostOf, CommonEnvSchema, ConfigError, loadConfig } from "@hatch/platform";
import { z } from "zod";
import type { PasswordCost } from "./auth/passwords.ts";

export interface GatewayConfig {
  /** Public origin, no trailing slash: `https://hatch.example` or `http://localhost:3000`. */
  baseUrl: string;
  /** `{baseUrl}/mcp`: the protected resource and the audience of every access token. */
  mcpUrl: string;
  port: number;
  /** The deployment secret; purpose keys are derived from it (access tokens, call contexts, CSRF). */
  secret: string;
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  /** Host header values accepted on /mcp (DNS-rebinding protection); the base URL's host is always allowed. */
  allowedHosts: string[];
  /**
   * Lets Client ID Metadata Documents be fetched over plain http and from private addresses. Only when set
   * explicitly (ALLOW_INSECURE_CLIENT_METADATA=true: `bun run dev` on loopback, tests); never inferred.
   */
  allowInsecureClientMetadata: boolean;
  /** Largest request body accepted on /mcp and the OAuth endpoints. */
  maxBodyBytes: number;
  /** Open MCP sessions of this gateway in all (memory bound); when full, the biggest holder's oldest is closed. */
  maxSessions: number;
  /** Open MCP sessions of one user; a new one closes that user's oldest, so no user can push others out. */
  maxSessionsPerUser: number;
  /**
   * Tool calls a minute per connection (OAuth grant) and per user, counted across gateway copies (JetStream KV on
   * NATS, memory in `bun run dev`); past them a call is refused with limit_exceeded and when to retry.
   */
  toolCallsPerMinutePerGrant: number;
  toolCallsPerMinutePerUser: number;
  /** Cookies get `Secure` when the base URL is https. */
  secureCookies: boolean;
  /**
   * Behind a proxy that sets `X-Forwarded-For`: the client's address is the last entry of that header (the one the
   * proxy added) instead of the connection's. Sign-in, sign-up and client registration are throttled per address.
   */
  trustProxy: boolean;
  /**
   * Serves the developer pages (`/dev/outbox`: a signed-in user's own kept mail). Off unless turned on in code:
   * only `bun run dev` does (scripts/dev.ts); no environment variable turns it on for `bun run start`.
   */
  devPages: boolean;
  /**
   * Stripe's webhook signing secret (STRIPE_WEBHOOK_SECRET, `whsec_…`): POST /webhooks/stripe verifies every event
   * with it. Without it the route answers 404 (no Stripe: billing uses its local provider).
   */
  stripeWebhookSecret: string | null;
  /**
   * METRICS_TOKEN: GET /metrics answers only `Authorization: Bearer <token>`. Without it /metrics is served only by
   * `bun run dev` (devPages, loopback); a deployed gateway answers 404 until a token is set.
   */
  metricsToken: string | null;
  /**
   * argon2id's cost for new password hashes: null, Bun's defaults, everywhere Hatch runs. Only code sets another
   * (test harnesses: TEST_PASSWORD_COST); no environment variable reads into it. Stored hashes name their own cost.
   */
  passwordCost: PasswordCost;
  /**
   * Where apps are served, as CSP sources (`https://*.apps.example`): the publish view of MCP Apps shows a preview of
   * the app in a frame from there. Read from the apps service's own settings (APPS_DOMAIN, APPS_PROTOCOL, APP_PORT).
   */
  appOrigins: string[];
}

// The apps service's settings are read too: where apps are served (the publish view's preview frame).
const GatewayEnvSchema = CommonEnvSchema.extend(AppsHostEnvSchema.shape).extend({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  BASE_URL: z
    .string()
    .refine(
      (v) => URL.canParse(v) && ["http:", "https:"].includes(new URL(v).protocol),
      "must be an http(s) URL such as https://hatch.example",
    )
    .optional(),
  ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(30).max(86_400).default(900),
  REFRESH_TOKEN_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(300)
    .default(30 * 86_400),
  ALLOWED_HOSTS: z.string().optional(),
  ALLOW_INSECURE_CLIENT_METADATA: z.enum(["true", "false"]).optional(),
  MAX_BODY_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(4 * 1024 * 1024),
  TRUST_PROXY: z.enum(["true", "false"]).optional(),
  MAX_SESSIONS: z.coerce.number().int().min(1).default(5_000),
  MAX_SESSIONS_PER_USER: z.coerce.number().int().min(1).default(20),
  TOOL_CALLS_PER_MINUTE_PER_GRANT: z.coerce.number().int().min(1).default(300),
  TOOL_CALLS_PER_MINUTE_PER_USER: z.coerce.number().int().min(1).default(600),
  STRIPE_WEBHOOK_SECRET: z
    .string()
    .regex(/^whsec_[A-Za-z0-9]+$/, "must be a Stripe webhook signing secret (whsec_…)")
    .optional(),
});

export interface GatewayConfigOverrides extends Partial<Omit<GatewayConfig, "mcpUrl">> {
  secret: string;
}

/** Builds a full config from a few fields; everything else gets the documented default. */
export function gatewayConfig(overrides: GatewayConfigOverrides): GatewayConfig {
  const port = overrides.port ?? 3000;
  const baseUrl = (overrides.baseUrl ?? `http://localhost:${port}`).replace(/\/+$/, "");
  const base = new URL(baseUrl);
  const loopback = ["localhost", "127.0.0.1", "[::1]"].includes(base.hostname);
  return {
    baseUrl,
    mcpUrl: `${baseUrl}/mcp`,
    port,
    secret: overrides.secret,
    accessTokenTtlSeconds: overrides.accessTokenTtlSeconds ?? 900,
    refreshTokenTtlSeconds: overrides.refreshTokenTtlSeconds ?? 30 * 86_400,
    allowedHosts: [
      ...new Set([
        base.host,
        ...(loopback ? [`localhost:${base.port || port}`, `127.0.0.1:${base.port || port}`] : []),
        ...(overrides.allowedHosts ?? []),
      ]),
    ],
    allowInsecureClientMetadata: overrides.allowInsecureClientMetadata ?? false,
    maxBodyBytes: overrides.maxBodyBytes ?? 4 * 1024 * 1024,
    maxSessions: overrides.maxSessions ?? 5_000,
    maxSessionsPerUser: overrides.maxSessionsPerUser ?? 20,
    toolCallsPerMinutePerGrant: overrides.toolCallsPerMinutePerGrant ?? 300,
    toolCallsPerMinutePerUser: overrides.toolCallsPerMinutePerUser ?? 600,
    secureCookies: overrides.secureCookies ?? base.protocol === "https:",
    trustProxy: overrides.trustProxy ?? false,
    devPages: overrides.devPages ?? false,
    stripeWebhookSecret: overrides.stripeWebhookSecret ?? null,
    metricsToken: overrides.metricsToken ?? null,
    passwordCost: overrides.passwordCost ?? null,
    appOrigins: overrides.appOrigins ?? ["http://*.localhost:3001"],
  };
}

/** Reads the gateway's environment. The secret comes from HATCH_SECRET or, in the embedded default, the caller. */
export function loadGatewayConfig(env: Record<string, string | undefined>, fallbackSecret?: string): GatewayConfig {
  const parsed = loadConfig(GatewayEnvSchema, env);
  const secret = parsed.HATCH_SECRET ?? fallbackSecret;
  if (!secret)
    throw new Error(
      "Invalid configuration:\n  HATCH_SECRET: is required when the gateway runs on its own (openssl rand -hex 32)",
    );
  // Its own URL (tokens' audience, sign-in links, the pages) is made from PORT before the socket opens.
  if (parsed.PORT === 0 && !parsed.BASE_URL)
    throw new ConfigError(
      "Invalid configuration:\n  PORT: 0 (any free port) needs BASE_URL too, the address clients reach this gateway at; or give a port number",
    );
  const apps = appsHostOf(parsed);
  return gatewayConfig({
    secret,
    port: parsed.PORT,
    baseUrl: parsed.BASE_URL,
    accessTokenTtlSeconds: parsed.ACCESS_TOKEN_TTL_SECONDS,
    refreshTokenTtlSeconds: parsed.REFRESH_TOKEN_TTL_SECONDS,
    allowedHosts: parsed.ALLOWED_HOSTS?.split(",")
      .map((h) => h.trim())
      .filter(Boolean),
    allowInsecureClientMetadata: parsed.ALLOW_INSECURE_CLIENT_METADATA
      ? parsed.ALLOW_INSECURE_CLIENT_METADATA === "true"
      : undefined,
    maxBodyBytes: parsed.MAX_BODY_BYTES,
    trustProxy: parsed.TRUST_PROXY === "true",
    maxSessions: parsed.MAX_SESSIONS,
    maxSessionsPerUser: parsed.MAX_SESSIONS_PER_USER,
    toolCallsPerMinutePerGrant: parsed.TOOL_CALLS_PER_MINUTE_PER_GRANT,
    toolCallsPerMinutePerUser: parsed.TOOL_CALLS_PER_MINUTE_PER_USER,
    stripeWebhookSecret: parsed.STRIPE_WEBHOOK_SECRET,
    metricsToken: parsed.METRICS_TOKEN,
    // APP_PORT=0 (any free port): the port is not known here, so any port of the apps' host names.
    appOrigins: [`${apps.protocol}//*.${apps.domain.replace(/:0$/, ":*")}`],
  });
}
