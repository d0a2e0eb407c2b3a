import type { DomainsConfig } from "../config.ts";
import type { ZoneRecord } from "../registrar/types.ts";

/**
 * The records a bought domain's zone gets at the registrar, pointing it at the edge: A/AAAA at the apex for each
 * EDGE_IPV4/EDGE_IPV6 address (an apex cannot hold a CNAME), and `www` as a CNAME to EDGE_CNAME_TARGET.
 */
export function edgeRecords(config: DomainsConfig): ZoneRecord[] {
  return [
    ...config.edgeIpv4.map((value): ZoneRecord => ({ type: "A", host: "", value })),
    ...config.edgeIpv6.map((value): ZoneRecord => ({ type: "AAAA", host: "", value })),
    { type: "CNAME", host: "www", value: config.edgeCnameTarget },
  ];
}
