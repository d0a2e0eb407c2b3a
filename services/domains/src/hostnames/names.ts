import { DomainNameSchema, ToolError } from "@hatch/contracts";
import { isIP } from "node:net";
import type { DomainsConfig } from "../config.ts";

// Which hostnames a person may point at Hatch, and how their DNS records are named.

/** The TXT record that proves a person controls a hostname's DNS: `_hatch-challenge.<hostname>` = the row's token. */
export const CHALLENGE_LABEL = "_hatch-challenge";

export function challengeName(hostname: string): string {
  return `${CHALLENGE_LABEL}.${hostname}`;
}

/**
 * Public suffixes of more than one label that people commonly register under (co.uk, com.au, ...). A hostname of
 * exactly one label more than a suffix is an apex (its own zone's top: it cannot hold a CNAME, so it gets A/AAAA
 * records); anything longer is a subdomain. A short built-in list, not the whole Public Suffix List: a suffix missing
 * here makes `example.<suffix>` look like a subdomain, and the records asked for are a CNAME, which the person's DNS
 * provider then refuses at the apex; add the suffix here when that happens.
 */
export const MULTI_LABEL_SUFFIXES: ReadonlySet<string> = new Set([
  // United Kingdom, Australia, New Zealand, Japan, Brazil, India, South Africa, and other common second levels.
  ...["co.uk", "org.uk", "me.uk", "ltd.uk", "plc.uk", "net.uk", "sch.uk", "ac.uk", "gov.uk"],
  ...["com.au", "net.au", "org.au", "edu.au", "gov.au", "id.au", "asn.au"],
  ...["co.nz", "net.nz", "org.nz", "ac.nz", "govt.nz", "geek.nz", "kiwi.nz"],
  ...["co.jp", "ne.jp", "or.jp", "ac.jp", "go.jp", "gr.jp"],
  ...["com.br", "net.br", "org.br", "gov.br"],
  ...["co.in", "net.in", "org.in", "firm.in", "gen.in", "ind.in"],
  ...["co.za", "org.za", "net.za", "web.za"],
  ...["com.mx", "org.mx", "com.ar", "com.co", "com.pe", "com.tr", "com.tw", "com.hk", "com.sg", "com.my", "com.ph"],
  ...["com.cn", "net.cn", "org.cn", "co.kr", "or.kr", "co.il", "org.il", "co.id", "or.id", "com.ua", "co.th", "in.th"],
  ...["com.pl", "net.pl", "org.pl", "com.es", "co.at", "or.at", "com.pt", "com.gr", "com.ng", "com.eg", "com.sa"],
  ...["co.ke", "or.ke", "com.vn", "com.pk", "com.bd", "com.np", "gov.in", "eu.com", "uk.com", "us.com"],
]);

/** Whether `hostname` (normalized) is the top of a registrable domain: example.com, example.co.uk. */
export function isApex(hostname: string): boolean {
  const labels = hostname.split(".");
  if (labels.length <= 2) return labels.length === 2;
  return labels.length === 3 && MULTI_LABEL_SUFFIXES.has(labels.slice(1).join("."));
}

/** The registrable domain a hostname belongs to (todo.example.co.uk → example.co.uk): DNS record names are relative to it. */
export function registrableDomain(hostname: string): string {
  const labels = hostname.split(".");
  const suffixLabels = labels.length >= 3 && MULTI_LABEL_SUFFIXES.has(labels.slice(-2).join(".")) ? 2 : 1;
  return labels.slice(-(suffixLabels + 1)).join(".");
}

/** A record's name as a DNS provider asks for it: relative to the registrable domain, `@` for the domain itself. */
export function relativeName(name: string, hostname: string): string {
  const zone = registrableDomain(hostname);
  if (name === zone) return "@";
  return name.endsWith(`.${zone}`) ? name.slice(0, -(zone.length + 1)) : name;
}

/** Lower case, no trailing dot. */
export function normalizeHostname(raw: string): string {
  return raw.trim().toLowerCase().replace(/\.$/, "");
}

/** Names that are never a person's own: Hatch's hosts, local and test names (RFC 6761), a bare public suffix. */
const RESERVED_SUFFIXES = ["localhost", "local", "internal", "invalid", "arpa", "home.arpa"];

/**
 * Checks a hostname a person wants to point at Hatch and answers it normalized; throws `invalid_input` with what to
 * give instead. `what` names it in the message ("hostname", "domain").
 */
export function checkOwnHostname(
  raw: string,
  config: Pick<DomainsConfig, "appsDomain" | "baseUrl" | "edgeCnameTarget">,
  what = "hostname",
): string {
  const hostname = normalizeHostname(raw);
  const bare = hostname.replace(/^\[|\]$/g, "");
  if (isIP(bare) !== 0 || /^[\d.]+$/.test(hostname)) {
    throw new ToolError(
      "invalid_input",
      `"${raw}" is an IP address; give a ${what} such as todo.example.com, and Hatch lists the DNS records that point it here.`,
    );
  }
  if (hostname.includes(".."))
    throw new ToolError(
      "invalid_input",
      `"${raw}" has an empty label (".."); give a ${what} such as todo.example.com.`,
    );
  if (!DomainNameSchema.safeParse(hostname).success) {
    throw new ToolError(
      "invalid_input",
      `"${raw}" is not a ${what}; give one such as todo.example.com, without https:// or a path.`,
    );
  }
  if (hostname.split(".").some((label) => label.length > 63))
    throw new ToolError("invalid_input", `"${raw}" has a label longer than 63 characters.`);
  const labels = hostname.split(".");
  const last = labels.at(-1)!;
  if (RESERVED_SUFFIXES.some((s) => hostname === s || hostname.endsWith(`.${s}`)) || last === "localhost") {
    throw new ToolError(
      "invalid_input",
      `${hostname} is a local name that no DNS provider serves; give a ${what} of a domain you own, such as todo.example.com.`,
    );
  }
  if (MULTI_LABEL_SUFFIXES.has(hostname))
    throw new ToolError(
      "invalid_input",
      `${hostname} is a public suffix, not a domain; give one under it, such as example.${hostname}.`,
    );
  for (const own of hatchHosts(config)) {
    if (hostname === own || hostname.endsWith(`.${own}`)) {
      throw new ToolError(
        "invalid_input",
        `${hostname} is one of Hatch's own addresses; apps are already served there. Give a domain you own, such as todo.example.com.`,
      );
    }
  }
  return hostname;
}

/** Hatch's own host names (without ports): the apps domain, the gateway's host and the edge's CNAME target. */
function hatchHosts(config: Pick<DomainsConfig, "appsDomain" | "baseUrl" | "edgeCnameTarget">): string[] {
  const hosts = [config.appsDomain.replace(/:\d+$/, ""), config.edgeCnameTarget];
  try {
    hosts.push(new URL(config.baseUrl).hostname);
  } catch {
    // baseUrl is validated by the config; nothing to add.
  }
  return [...new Set(hosts.map((h) => h.toLowerCase()).filter((h) => h.includes(".") || h === "localhost"))];
}
