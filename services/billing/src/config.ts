import { CommonEnvSchema, loadConfig } from "@hatch/platform";
import { z } from "zod";

/** The billing service's settings (every one has a working default for `bun run dev`: the local provider). */
export interface BillingConfig {
  /** The gateway's public origin: the billing settings page, the local checkout, return URLs. */
  baseUrl: string;
  /** Stripe when set (STRIPE_SECRET_KEY); otherwise the local provider. */
  stripe: StripeSettings | null;
  /** BILLING_ENFORCE_LIMITS (default true): false answers every account with no limits (a server that bills nobody). */
  enforceLimits: boolean;
}

export interface StripeSettings {
  secretKey: string;
  /** The API's origin (STRIPE_API_URL), for tests against a local fake; default Stripe's own. */
  apiUrl: string | null;
  /** Price ids of the self-serve plans (STRIPE_PRICE_PRO, STRIPE_PRICE_TEAM; team is per seat). */
  prices: { pro: string; team: string };
}

const BillingEnvSchema = CommonEnvSchema.extend({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  BASE_URL: z.url({ protocol: /^https?$/ }).optional(),
  STRIPE_SECRET_KEY: z
    .string()
    .regex(/^(sk|rk)_(test|live)_[A-Za-z0-9]+$/, "must be a Stripe secret key (sk_test_… or sk_live_…)")
    .optional(),
  STRIPE_API_URL: z.url({ protocol: /^https?$/ }).optional(),
  STRIPE_PRICE_PRO: z
    .string()
    .regex(/^price_[A-Za-z0-9]+$/)
    .optional(),
  STRIPE_PRICE_TEAM: z
    .string()
    .regex(/^price_[A-Za-z0-9]+$/)
    .optional(),
  BILLING_ENFORCE_LIMITS: z.enum(["true", "false"]).default("true"),
});

/** Parses the environment; throws ConfigError naming every bad variable. */
export function loadBillingConfig(env: Record<string, string | undefined>): BillingConfig {
  const parsed = loadConfig(
    BillingEnvSchema.refine((e) => !e.STRIPE_SECRET_KEY || (e.STRIPE_PRICE_PRO && e.STRIPE_PRICE_TEAM), {
      message:
        "STRIPE_SECRET_KEY needs STRIPE_PRICE_PRO and STRIPE_PRICE_TEAM (the price ids of the Pro and Team plans)",
      path: ["STRIPE_SECRET_KEY"],
    }),
    env,
  );
  return {
    baseUrl: (parsed.BASE_URL ?? `http://localhost:${parsed.PORT}`).replace(/\/+$/, ""),
    enforceLimits: parsed.BILLING_ENFORCE_LIMITS === "true",
    stripe: parsed.STRIPE_SECRET_KEY
      ? {
          secretKey: parsed.STRIPE_SECRET_KEY,
          apiUrl: parsed.STRIPE_API_URL ?? null,
          prices: { pro: parsed.STRIPE_PRICE_PRO!, team: parsed.STRIPE_PRICE_TEAM! },
        }
      : null,
  };
}
