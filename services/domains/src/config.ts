import { CommonEnvSchema, loadConfig } from "@hatch/platform";
import { isIP } from "node:net";
import { z } from "zod";

/** The domains service's settings; every one has a working default for `bun run dev`. */
export interface DomainsConfig {
  /** The gateway's public origin (confirm pages, billing links). */
  baseUrl: string;
  /** Where apps are served by default (`<address>.<appsDomain>`), as the apps service has it. */
  appsDomain: string;
  appsProtocol: "http:" | "https:";
  /** DNS servers the checks ask (DNS_SERVERS, `host` or `host:port`, comma-separated); empty = the system's. */
  dnsServers: string[];
  /** What a custom subdomain's CNAME must point to (EDGE_CNAME_TARGET, default `edge.<apps domain>`). */
  edgeCnameTarget: string;
  /** The edge's public addresses, for an apex domain's A and AAAA records (EDGE_IPV4, EDGE_IPV6, comma-separated). */
  edgeIpv4: string[];
  edgeIpv6: string[];
  /**
   * Where the certificate check connects to see the edge's certificate for a hostname (EDGE_TLS_ADDRESS, host:port).
   * Null (the default in dev, where the edge serves no TLS): the certificate stage is skipped.
   */
  edgeTlsAddress: { host: string; port: number } | null;
  /** Extra roots trusted by the certificate check (EDGE_CA_FILE, PEM; tests trust Pebble's root). */
  edgeCaFile: string | null;
  /** The HTTP listener of this service: Caddy's on-demand TLS `ask` (DOMAINS_HTTP_PORT, 0 = any free port). */
  httpHost: string;
  httpPort: number | null;
  /** The registrar adapter (REGISTRAR: `simulated`, the default, or `namecom`). */
  registrar: RegistrarSettings;
  /** The job queue's poll interval and lease (DOMAINS_JOB_POLL_MS, DOMAINS_JOB_LEASE_MS). */
  jobPollMs: number;
  jobLeaseMs: number;
  /** How often a hostname waiting for DNS or its certificate is checked again (DOMAINS_RECHECK_MS, default 60 s). */
  recheckMs: number;
}

export type RegistrarSettings =
  | {
      kind: "simulated" /** How long each simulated stage takes (SIMULATED_REGISTRAR_STEP_MS, default 5 s). */;
      stepMs: number;
    }
  | { kind: "namecom"; apiUrl: string; username: string; token: string };

const list = z
  .string()
  .transform((v) =>
    v
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
  )
  .optional();

const DomainsEnvSchema = CommonEnvSchema.extend({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  BASE_URL: z.url({ protocol: /^https?$/ }).optional(),
  APP_PORT: z.coerce.number().int().min(0).max(65535).default(3001),
  APPS_DOMAIN: z
    .string()
    .regex(/^[a-z0-9.-]+(?::\d+)?$/, "must be a host name with an optional port")
    .optional(),
  APPS_PROTOCOL: z.enum(["http", "https"]).optional(),
  DNS_SERVERS: list.refine(
    (v) => !v || v.every((s) => /^[0-9a-fA-F.:[\]]+$/.test(s)),
    "must be IP addresses with optional ports, comma-separated (e.g. 1.1.1.1,127.0.0.1:5353)",
  ),
  EDGE_CNAME_TARGET: z
    .string()
    .regex(/^[a-z0-9.-]+$/, "must be a host name")
    .optional(),
  EDGE_IPV4: list.refine((v) => !v || v.every((s) => isIP(s) === 4), "must be IPv4 addresses, comma-separated"),
  EDGE_IPV6: list.refine((v) => !v || v.every((s) => isIP(s) === 6), "must be IPv6 addresses, comma-separated"),
  EDGE_TLS_ADDRESS: z
    .string()
    .regex(/^[a-z0-9.-]+:\d{1,5}$/, "must be host:port, e.g. edge:443")
    .optional(),
  EDGE_CA_FILE: z.string().min(1).optional(),
  DOMAINS_HTTP_HOST: z.string().min(1).default("127.0.0.1"),
  DOMAINS_HTTP_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  REGISTRAR: z.enum(["simulated", "namecom"]).default("simulated"),
  SIMULATED_REGISTRAR_STEP_MS: z.coerce.number().int().min(0).max(3_600_000).default(5_000),
  NAMECOM_API_URL: z.url({ protocol: /^https?$/ }).default("https://api.name.com"),
  NAMECOM_USERNAME: z.string().min(1).optional(),
  NAMECOM_TOKEN: z.string().min(1).optional(),
  DOMAINS_JOB_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(1_000),
  DOMAINS_JOB_LEASE_MS: z.coerce.number().int().min(300).max(600_000).default(30_000),
  DOMAINS_RECHECK_MS: z.coerce.number().int().min(50).max(86_400_000).default(60_000),
});

/** Parses the environment; throws ConfigError naming every bad variable. */
export function loadDomainsConfig(env: Record<string, string | undefined>): DomainsConfig {
  const parsed = loadConfig(
    DomainsEnvSchema.refine((e) => e.REGISTRAR !== "namecom" || (e.NAMECOM_USERNAME && e.NAMECOM_TOKEN), {
      message: "REGISTRAR=namecom needs NAMECOM_USERNAME and NAMECOM_TOKEN",
      path: ["REGISTRAR"],
    }),
    env,
  );
  const appsDomain = parsed.APPS_DOMAIN ?? `localhost:${parsed.APP_PORT}`;
  const tls = parsed.EDGE_TLS_ADDRESS?.split(":");
  return {
    baseUrl: (parsed.BASE_URL ?? `http://localhost:${parsed.PORT}`).replace(/\/+$/, ""),
    appsDomain,
    appsProtocol: parsed.APPS_PROTOCOL ? `${parsed.APPS_PROTOCOL}:` : parsed.APPS_DOMAIN ? "https:" : "http:",
    dnsServers: parsed.DNS_SERVERS ?? [],
    edgeCnameTarget: parsed.EDGE_CNAME_TARGET ?? `edge.${appsDomain.replace(/:\d+$/, "")}`,
    edgeIpv4: parsed.EDGE_IPV4 ?? [],
    edgeIpv6: parsed.EDGE_IPV6 ?? [],
    edgeTlsAddress: tls ? { host: tls[0]!, port: Number(tls[1]) } : null,
    edgeCaFile: parsed.EDGE_CA_FILE ?? null,
    httpHost: parsed.DOMAINS_HTTP_HOST,
    httpPort: parsed.DOMAINS_HTTP_PORT ?? null,
    registrar:
      parsed.REGISTRAR === "namecom"
        ? {
            kind: "namecom",
            apiUrl: parsed.NAMECOM_API_URL.replace(/\/+$/, ""),
            username: parsed.NAMECOM_USERNAME!,
            token: parsed.NAMECOM_TOKEN!,
          }
        : { kind: "simulated", stepMs: parsed.SIMULATED_REGISTRAR_STEP_MS },
    jobPollMs: parsed.DOMAINS_JOB_POLL_MS,
    jobLeaseMs: parsed.DOMAINS_JOB_LEASE_MS,
    recheckMs: parsed.DOMAINS_RECHECK_MS,
  };
}
