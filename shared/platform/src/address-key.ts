/**
 * Whose anonymous requests count together, for limits per client address: IPv4 as it is (also when IPv4-mapped),
 * IPv6 by its /64, the block one subscriber gets (otherwise a single machine could spend a new address on every
 * request). The gateway's sign-in limits and the app host's data limits both key by it.
 */
export function addressKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!address.includes(":")) return address;
  const [head = "", tail = ""] = address.split("%")[0]!.toLowerCase().split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = address.includes("::")
    ? [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`;
}

/**
 * The client's address: with `trustProxy`, the last X-Forwarded-For entry (the one our proxy added; entries before it
 * are whatever the client sent), else the connection's own address. Empty when neither is known.
 */
export function clientAddressOf(request: Request, trustProxy: boolean, connection: string | undefined): string {
  const forwarded = trustProxy ? request.headers.get("x-forwarded-for")?.split(",").at(-1)?.trim() : undefined;
  return forwarded || connection || "";
}
