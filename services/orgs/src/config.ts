import { CommonEnvSchema, loadConfig } from "@hatch/platform";
import { z } from "zod";

/** The orgs service's settings, read from its environment (each has a working default for `bun run dev`). */
export interface OrgsConfig {
  /** The gateway's public origin: invitation links point there. */
  baseUrl: string;
  invitationTtlMs: number;
  /** Where invitation emails go out; null keeps them in the dev outbox (`/dev/outbox` on the gateway). */
  smtp: SmtpSettings | null;
  /** The From header of every mail, e.g. `Hatch <no-reply@hatch.example>`. */
  mailFrom: string;
}

export interface SmtpSettings {
  host: string;
  port: number;
  /** smtps:// = TLS from the first byte; smtp:// = plain, upgraded with STARTTLS when the server offers it. */
  implicitTls: boolean;
  user?: string;
  password?: string;
  /** Name sent in EHLO. */
  heloName: string;
}

const OrgsEnvSchema = CommonEnvSchema.extend({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  BASE_URL: z.url({ protocol: /^https?$/ }).optional(),
  SMTP_URL: z
    .string()
    .refine((v) => URL.canParse(v) && ["smtp:", "smtps:"].includes(new URL(v).protocol) && new URL(v).hostname !== "", {
      message:
        "must be smtp://[user:password@]host[:port] (STARTTLS when offered) or smtps://… (TLS), e.g. smtp://mail.example.com:587",
    })
    .optional(),
  MAIL_FROM: z
    .string()
    .regex(
      /^[^\r\n]*<[^<>\s@]+@[^<>\s@]+>$|^[^<>\s@]+@[^<>\s@]+$/,
      "must be an address, optionally with a name: Hatch <no-reply@example.com>",
    )
    .optional(),
  INVITATION_TTL_DAYS: z.coerce.number().int().min(1).max(30).default(7),
});

export function loadOrgsConfig(env: Record<string, string | undefined>): OrgsConfig {
  const parsed = loadConfig(OrgsEnvSchema, env);
  const baseUrl = (parsed.BASE_URL ?? `http://localhost:${parsed.PORT}`).replace(/\/+$/, "");
  return {
    baseUrl,
    invitationTtlMs: parsed.INVITATION_TTL_DAYS * 86_400_000,
    smtp: parsed.SMTP_URL ? smtpSettings(new URL(parsed.SMTP_URL), new URL(baseUrl).hostname) : null,
    mailFrom: parsed.MAIL_FROM ?? `Hatch <no-reply@${new URL(baseUrl).hostname}>`,
  };
}

function smtpSettings(url: URL, heloName: string): SmtpSettings {
  const implicitTls = url.protocol === "smtps:";
  return {
    host: url.hostname.replace(/^\[|\]$/g, ""),
    port: url.port ? Number(url.port) : implicitTls ? 465 : 587,
    implicitTls,
    user: url.username ? decodeURIComponent(url.username) : undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
    heloName,
  };
}
