import { isIP } from "node:net";

// Which addresses a server-side fetch chosen by a stranger may reach (the gateway's client metadata documents, the
// apps service's declared APIs): only globally routable unicast. Everything in
// the IANA IPv4 and IPv6 special-purpose registries is refused, and IPv6 forms that carry an IPv4 address (mapped,
// NAT64, 6to4) are judged by the IPv4 address inside. Addresses are parsed to bytes; string prefixes lie
// (`::ffff:7f00:1` is 127.0.0.1).

type Bytes = number[];

interface Range {
  prefix: Bytes;
  bits: number;
}

function range(address: string, bits: number): Range {
  const prefix = parseIPv4(address) ?? parseIPv6(address);
  if (!prefix) throw new Error(`bad range ${address}`);
  return { prefix, bits };
}

const V4_SPECIAL: Range[] = [
  range("0.0.0.0", 8), // "this network"
  range("10.0.0.0", 8), // private
  range("100.64.0.0", 10), // shared address space (carrier-grade NAT)
  range("127.0.0.0", 8), // loopback
  range("169.254.0.0", 16), // link local (cloud metadata services live here)
  range("172.16.0.0", 12), // private
  range("192.0.0.0", 24), // IETF protocol assignments
  range("192.0.2.0", 24), // documentation
  range("192.88.99.0", 24), // 6to4 relay anycast
  range("192.168.0.0", 16), // private
  range("198.18.0.0", 15), // benchmarking
  range("198.51.100.0", 24), // documentation
  range("203.0.113.0", 24), // documentation
  range("224.0.0.0", 4), // multicast
  range("240.0.0.0", 4), // reserved, including 255.255.255.255
];

const V6_SPECIAL: Range[] = [
  range("::", 96), // unspecified, loopback and the deprecated IPv4-compatible form (::a.b.c.d)
  range("::ffff:0:0:0", 96), // IPv4-translated (SIIT)
  range("64:ff9b:1::", 48), // local-use IPv4/IPv6 translation
  range("100::", 64), // discard only
  range("2001::", 23), // IETF protocol assignments, including Teredo (2001::/32)
  range("2001:db8::", 32), // documentation
  range("3fff::", 20), // documentation
  range("5f00::", 16), // segment routing SIDs
  range("fc00::", 7), // unique local
  range("fe80::", 10), // link local
  range("fec0::", 10), // site local (deprecated, still routed by some stacks)
  range("ff00::", 8), // multicast
];

/** IPv6 prefixes whose address carries an IPv4 address at `offset`: judged by that IPv4 address. */
const V6_EMBEDDING: Array<Range & { offset: number }> = [
  { ...range("::ffff:0:0", 96), offset: 12 }, // IPv4-mapped
  { ...range("64:ff9b::", 96), offset: 12 }, // NAT64 well-known prefix
  { ...range("2002::", 16), offset: 2 }, // 6to4
];

/** The only IPv6 block allocated for global unicast; anything outside it (and not embedding IPv4) is refused. */
const V6_GLOBAL_UNICAST = range("2000::", 3);

function inRange(bytes: Bytes, { prefix, bits }: Range): boolean {
  if (bytes.length !== prefix.length) return false;
  for (let i = 0; i < bits; i += 8) {
    const take = Math.min(8, bits - i);
    const mask = (0xff << (8 - take)) & 0xff;
    if (((bytes[i / 8] ?? 0) & mask) !== ((prefix[i / 8] ?? 0) & mask)) return false;
  }
  return true;
}

/** Dotted-quad IPv4 to 4 bytes; null unless exactly four decimal parts 0–255. */
export function parseIPv4(text: string): Bytes | null {
  if (isIP(text) !== 4) return null;
  return text.split(".").map(Number);
}

/** IPv6 (with `::`, an optional dotted IPv4 tail and an optional zone id) to 16 bytes; null when invalid. */
export function parseIPv6(text: string): Bytes | null {
  const address = text.replace(/%.*$/, "");
  if (isIP(address) !== 6) return null;
  let groups = address.toLowerCase();
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(groups);
  if (tail) {
    const v4 = parseIPv4(tail[1]!);
    if (!v4) return null;
    groups = `${groups.slice(0, -tail[1]!.length)}${((v4[0]! << 8) | v4[1]!).toString(16)}:${((v4[2]! << 8) | v4[3]!).toString(16)}`;
  }
  const [head = "", rest] = groups.split("::");
  const left = head ? head.split(":") : [];
  const right = rest ? rest.split(":") : [];
  const hextets =
    rest === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  if (hextets.length !== 8) return null;
  return hextets.flatMap((h) => {
    const value = Number.parseInt(h, 16);
    return [value >> 8, value & 0xff];
  });
}

function isSpecialV4(bytes: Bytes): boolean {
  return V4_SPECIAL.some((r) => inRange(bytes, r));
}

/**
 * True when the address must not be fetched: anything but a globally routable unicast address, in any notation.
 * Text that is not an IP address counts as special (refuse what we cannot judge).
 */
export function isSpecialPurposeAddress(address: string): boolean {
  const v4 = parseIPv4(address);
  if (v4) return isSpecialV4(v4);
  const v6 = parseIPv6(address.replace(/^\[|\]$/g, ""));
  if (!v6) return true;
  const embedding = V6_EMBEDDING.find((r) => inRange(v6, r));
  if (embedding) return isSpecialV4(v6.slice(embedding.offset, embedding.offset + 4));
  if (V6_SPECIAL.some((r) => inRange(v6, r))) return true;
  return !inRange(v6, V6_GLOBAL_UNICAST);
}
