import type { DnsRecord } from "@hatch/contracts";
import type { DomainsConfig } from "../config.ts";
import type { HostnameKind, RecordSeen } from "../db/schema.ts";
import type { DnsLookup } from "../dns/lookup.ts";
import type { ZoneRecord } from "../registrar/types.ts";
import { challengeName, isApex, relativeName } from "./names.ts";

// The DNS records that point a hostname at Hatch, and what a check of them saw.

type EdgeConfig = Pick<DomainsConfig, "edgeCnameTarget" | "edgeIpv4" | "edgeIpv6">;

/** A label no one uses: a wildcard CNAME answers for it, a plain record does not. */
export const WILDCARD_PROBE = "hatch-wildcard-check";

/**
 * The records Hatch asks for, none seen yet. `custom`: the TXT proof, then a CNAME to the edge for a subdomain or
 * A/AAAA to the edge's addresses for an apex. `company`: the TXT proof and a wildcard CNAME `*.<domain>` (each
 * `<address>.<domain>` reaches the edge). `bought`: only the routing records (the purchase proves ownership).
 */
export function wantedRecords(kind: HostnameKind, hostname: string, token: string, edge: EdgeConfig): RecordSeen[] {
  const proof: RecordSeen[] =
    kind === "bought" ? [] : [{ type: "TXT", name: challengeName(hostname), value: token, seen: false }];
  if (kind === "company")
    return [...proof, { type: "CNAME", name: `*.${hostname}`, value: edge.edgeCnameTarget, seen: false }];
  if (!isApex(hostname)) return [...proof, { type: "CNAME", name: hostname, value: edge.edgeCnameTarget, seen: false }];
  return [
    ...proof,
    ...edge.edgeIpv4.map((ip): RecordSeen => ({ type: "A", name: hostname, value: ip, seen: false })),
    ...edge.edgeIpv6.map((ip): RecordSeen => ({ type: "AAAA", name: hostname, value: ip, seen: false })),
  ];
}

/** An apex needs the edge's addresses; a server without EDGE_IPV4/EDGE_IPV6 can only take subdomains. */
export function apexUnsupported(hostname: string, edge: EdgeConfig): boolean {
  return isApex(hostname) && edge.edgeIpv4.length === 0 && edge.edgeIpv6.length === 0;
}

/**
 * The zone records a bought domain gets at its registrar (the buy side passes them to `register`, and the bought
 * hostname's DNS stage asks the registrar whether they are live). An apex without configured edge addresses gets a
 * CNAME at the apex, which registrars serve as an ALIAS (flattened).
 */
export function edgeZoneRecords(domain: string, edge: EdgeConfig): ZoneRecord[] {
  const routing = wantedRecords("bought", domain, "", edge).map(
    (r): ZoneRecord => ({
      type: r.type,
      host: r.name === domain ? "" : r.name.slice(0, -(domain.length + 1)),
      value: r.value,
    }),
  );
  return routing.length > 0 ? routing : [{ type: "CNAME", host: "", value: edge.edgeCnameTarget }];
}

export interface DnsCheck {
  records: RecordSeen[];
  /** Every record is seen. */
  complete: boolean;
  problem: string | null;
}

const norm = (name: string) => name.toLowerCase().replace(/\.$/, "");

/** Asks the resolver for each wanted record; a lookup that fails (timeout, SERVFAIL) is a problem, not an error. */
export async function checkRecords(dns: DnsLookup, hostname: string, wanted: RecordSeen[]): Promise<DnsCheck> {
  const failures: string[] = [];
  const ask = async (question: () => Promise<string[]>, name: string, type: string): Promise<string[] | null> => {
    try {
      return await question();
    } catch (error) {
      failures.push(
        `the DNS lookup of the ${type} record of ${name} failed (${(error as { code?: string }).code ?? "no answer"}); Hatch tries again`,
      );
      return null;
    }
  };
  const answers = new Map<string, Promise<string[] | null>>();
  const lookup = (type: RecordSeen["type"], name: string): Promise<string[] | null> => {
    const queried = name.startsWith("*.") ? `${WILDCARD_PROBE}.${name.slice(2)}` : name;
    const key = `${type} ${queried}`;
    if (!answers.has(key)) {
      const question =
        type === "TXT"
          ? () => dns.txt(queried)
          : type === "CNAME"
            ? () => dns.cname(queried)
            : type === "A"
              ? () => dns.a(queried)
              : () => dns.aaaa(queried);
      answers.set(key, ask(question, name, type));
    }
    return answers.get(key)!;
  };
  const unanswered = new Set<RecordSeen>();
  const records = await Promise.all(
    wanted.map(async (record): Promise<RecordSeen> => {
      const found = await lookup(record.type, record.name);
      if (found === null) {
        const left = { ...record, seen: false };
        unanswered.add(left);
        return left;
      }
      const values = record.type === "TXT" ? found : found.map(norm);
      // A and AAAA: every address must be the edge's (a leftover address would send some visitors elsewhere).
      const ours =
        record.type === "A" || record.type === "AAAA"
          ? wanted.filter((w) => w.type === record.type).map((w) => w.value)
          : [record.value];
      const seen =
        values.includes(record.type === "TXT" ? record.value : norm(record.value)) &&
        (record.type === "TXT" || values.every((v) => ours.includes(v)));
      return seen ? { ...record, seen: true } : { ...record, seen: false, found: values };
    }),
  );
  // A subdomain without the CNAME may hold other records instead (an A record from before): say so.
  const extra: string[] = [];
  for (const record of records) {
    if (record.type !== "CNAME" || record.seen || unanswered.has(record) || (record.found?.length ?? 0) > 0) continue;
    const addresses = await lookup("A", record.name);
    if (addresses && addresses.length > 0)
      extra.push(
        `the name ${record.name} has A records (${addresses.join(", ")}) instead of a CNAME to ${record.value}; remove them and add the CNAME`,
      );
  }
  const complete = records.every((r) => r.seen);
  const missing = [...records.filter((r) => !r.seen && !unanswered.has(r)).map(describeMissing), ...extra];
  const problem = unique([...missing, ...failures]).join("; ");
  return {
    records,
    complete,
    problem: complete
      ? null
      : `${capitalize(problem)}.${missing.length ? " DNS changes can take a few minutes to show." : ""}`,
  };
}

function describeMissing(record: RecordSeen): string {
  const found = record.found ?? [];
  if (record.type === "TXT") {
    return found.length > 0
      ? `the TXT record ${record.name} holds ${found.map((v) => `"${v}"`).join(", ")}, it should hold "${record.value}"`
      : `the TXT record ${record.name} is not there yet (it should hold "${record.value}")`;
  }
  if (record.type === "CNAME") {
    return found.length > 0
      ? `the CNAME ${record.name} points to ${found.join(", ")}, it should point to ${record.value}`
      : `the CNAME ${record.name} → ${record.value} is not there yet`;
  }
  const others = found.filter((v) => v !== record.value);
  if (found.includes(record.value))
    return `the ${record.type} records of ${record.name} also point to ${others.join(", ")}, which is not Hatch's edge; remove those`;
  return found.length > 0
    ? `the ${record.type} record of ${record.name} points to ${found.join(", ")}, it should point to ${record.value}`
    : `the ${record.type} record ${record.name} → ${record.value} is not there yet`;
}

const unique = (items: string[]) => [...new Set(items)];
const capitalize = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

const PURPOSE: Record<RecordSeen["type"], string> = {
  TXT: "proves you control this domain's DNS (only then does Hatch serve the app there)",
  CNAME: "sends visitors to Hatch's edge, which serves the app and its HTTPS certificate",
  A: "sends visitors (IPv4) to Hatch's edge; a domain's top cannot hold a CNAME",
  AAAA: "sends visitors (IPv6) to Hatch's edge",
};

/** The records as a tool shows them: names relative to the person's domain, with their state and purpose. */
export function recordsOut(hostname: string, records: RecordSeen[]): DnsRecord[] {
  return records.map((r) => ({
    type: r.type,
    name: relativeName(r.name, hostname),
    value: r.value,
    ttl: r.type === "TXT" ? 300 : 3600,
    status: r.seen ? "ok" : (r.found?.length ?? 0) > 0 ? "wrong" : "missing",
    purpose:
      r.type === "CNAME" && r.name.startsWith("*.")
        ? `sends every <address>.${hostname} to Hatch's edge, which serves the company's apps there`
        : PURPOSE[r.type],
  }));
}

/** The records in a tool's text, one per line: what to add, and what it is for. */
export function recordsText(records: DnsRecord[]): string {
  return records.map((r) => `- ${r.type} ${r.name} → ${r.value} (${r.status}): ${r.purpose}`).join("\n");
}
